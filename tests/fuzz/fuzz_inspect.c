/*
 * Differential: inspect over arbitrary session file bytes, three ways through the one line walk
 * (session/walk.h). The whole read checks every line the full way (the reference); the streamed
 * read vouches for lines by the shape cache (the fast path), in order and split in two (the read
 * ahead): it must give the same verdict, events, type codes, valid length and closers. The scan
 * (the envelope's check, shapes too) may take more (payloads are load's), never less, and where
 * inspect takes the file the scan counts the same.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "session/repair.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void
same_image(const struct sess_image *a, int ra, const struct sess_image *b, int rb)
{
	if (ra != rb)
		__builtin_trap();
	if (ra < 0)
		return;
	if (a->nevents != b->nevents || a->valid_len != b->valid_len || a->torn != b->torn ||
	    a->nclosers != b->nclosers || memcmp(a->types, b->types, a->nevents + a->nclosers) != 0)
		__builtin_trap();
	/* the closers the streamed read built from the open turn are the whole read's */
	size_t nb = json_array_size(b->events);
	for (size_t i = 0; i < b->nclosers; i++)
		if (!json_equal(json_array_get(a->events, a->nevents + i), json_array_get(b->events, nb - b->nclosers + i)))
			__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct sess_image whole, img;
	struct sess_scan sc;
	struct err e;
	int rw, rs;

	err_clear(&e);
	rw = sess_inspect_buf((const char *)data, size, &whole, &e);
	if (rw == 0 && whole.valid_len > (off_t)size)
		__builtin_trap();	/* the valid prefix can never be longer than the file */
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	if (fd >= 0 && write(fd, data, size) == (ssize_t)size) {
		err_clear(&e);
		same_image(&whole, rw, &img, sess_inspect_stream_split(fd, "fuzz", NULL, 0, &img, &e));
		sess_image_free(&img);
		err_clear(&e);
		same_image(&whole, rw, &img, sess_inspect_stream_split(fd, "fuzz", NULL, 1, &img, &e));
		sess_image_free(&img);
	}
	if (fd >= 0)
		close(fd);
	err_clear(&e);
	rs = sess_scan_buf((const char *)data, size, NULL, &sc, &e);
	if (rw == 0 && (rs != 0 || sc.nevents != (long)whole.nevents || sc.valid_len != whole.valid_len ||
	    sc.torn != whole.torn || sc.nclosers != whole.nclosers))
		__builtin_trap();
	sess_scan_free(&sc);
	sess_image_free(&whole);
	return 0;
}
