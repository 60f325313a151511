/* The replay recording parser over arbitrary bytes. */
#include "model/model.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct runq q;
	struct err e;
	struct model *m;

	runq_init(&q, NULL);
	err_clear(&e);
	m = model_replay_new_buf(&q, (const char *)data, size, &e);
	if (m == NULL && e.code == ERR_NONE)
		__builtin_trap();	/* every refusal says why */
	model_free(m);
	return 0;
}
