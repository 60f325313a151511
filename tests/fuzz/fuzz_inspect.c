/* inspect (and the closers) over arbitrary session file bytes. */
#include "session/repair.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct sess_image img;
	struct err e;

	err_clear(&e);
	if (sess_inspect_buf((const char *)data, size, &img, &e) == 0 && img.valid_len > (off_t)size)
		__builtin_trap();	/* the valid prefix can never be longer than the file */
	sess_image_free(&img);
	return 0;
}
