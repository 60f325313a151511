/*
 * The file services on an 8 MiB source-like file (docs/contract.md §16.2-§16.3): read's text (target
 * >= 500 MB/s of file), a read page by page through the whole file, the read tool's local
 * path (load, hash for the record, render), and edit (target < 30 ms).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/xmalloc.h"
#include "bench/util.h"
#include "workspace/diff.h"
#include "workspace/fs.h"
#include "base/hash64.h"
#include "workspace/obs.h"
#include "workspace/path.h"

#define RUNS 21
#define SIZE (8u << 20)
#define TARGET_MBS 500.0
#define TARGET_EDIT_MS 30.0

static double
median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof(*t), bench_cmp_double);
	return t[n / 2];
}

/* Lines of 0-110 characters, indented, some non-ASCII: about 8 MiB. */
static void
make_file(struct buf *b)
{
	unsigned seed = 12345;

	while (b->len < SIZE - 200) {
		int n;

		seed = seed * 1103515245u + 12345u;
		n = (int)((seed >> 16) % 110);
		buf_append(b, "\t\t", (seed >> 8) % 3);
		for (int i = 0; i < n; i++)
			buf_append(b, &"abcdefghij klmnopqrstuvwxyz_(){};=+"[(i * 7 + (int)(seed >> 4)) % 35], 1);
		if (seed % 17 == 0)
			buf_puts(b, " /* caf\xc3\xa9 \xe2\x82\xac */");
		buf_append(b, "\n", 1);
	}
	buf_puts(b, "UNIQUE_NEEDLE_AT_THE_END();\n");
}

/* The median ms of one render at offset/limit, and how many file bytes it covered. */
static double
bench_render(const struct buf *f, size_t offset, size_t limit, struct ws_read_span *sp)
{
	double t[RUNS];
	struct buf out;
	struct err e;

	buf_init(&out);
	for (int r = 0; r < RUNS; r++) {
		double t0 = bench_now_ms();

		out.len = 0;
		err_clear(&e);
		if (ws_fs_read_render("f", f->data, f->len, offset, limit, &out, sp, &e) != 0)
			exit(1);
		t[r] = bench_now_ms() - t0;
	}
	buf_free(&out);
	return median(t, RUNS);
}

int
main(void)
{
	struct buf f, out;
	struct ws_read_span sp;
	struct ws_roots roots;
	struct ws_edit ed;
	struct ws_obs obs;
	struct err e;
	char dir[64], *path;
	FILE *fp;
	double t[RUNS], ms, mbs;
	size_t lines, calls = 0;

	buf_init(&f);
	buf_init(&out);
	make_file(&f);
	lines = 0;
	for (size_t i = 0; i < f.len; i++)
		lines += f.data[i] == '\n';

	/* One default call: the first 2000 lines, the line count of the rest, the footer. */
	ms = bench_render(&f, 1, 0, &sp);
	mbs = f.len / 1e6 / (ms / 1e3);
	printf("read_render[8MiB, default offset/limit]: %.0f MB/s (median %.3f ms of %d; %zu bytes, %zu lines)\n",
	    mbs, ms, RUNS, f.len, lines);
	printf("ratio[read_render / target 500 MB/s]: %.1fx\n", mbs / TARGET_MBS);
	/* The formatting alone: 2000 lines that all fit in one answer, nothing after them. */
	{
		struct buf head;
		const char *q = f.data;

		for (int i = 0; i < 2000; i++)
			q = strchr(q, '\n') + 1;
		buf_init(&head);
		buf_append(&head, f.data, (size_t)(q - f.data));
		ms = bench_render(&head, 1, 0, &sp);
		printf("read_render[2000 lines, %zu bytes, formatting only]: %.0f MB/s (median %.3f ms)\n",
		    head.len, head.len / 1e6 / (ms / 1e3), ms);
		printf("ratio[read_render formatting / target 500 MB/s]: %.1fx\n",
		    head.len / 1e6 / (ms / 1e3) / TARGET_MBS);
		buf_free(&head);
	}
	ms = bench_render(&f, lines - 1000, 0, &sp);
	mbs = f.len / 1e6 / (ms / 1e3);
	printf("read_render[8MiB, offset near the end]: %.0f MB/s (median %.3f ms)\n", mbs, ms);

	/* Every line of the file rendered, page after page, as a model paging through it does. */
	for (int r = 0; r < RUNS; r++) {
		double t0 = bench_now_ms();
		size_t offset = 1;

		calls = 0;
		do {
			out.len = 0;
			err_clear(&e);
			if (ws_fs_read_render("f", f.data, f.len, offset, 0, &out, &sp, &e) != 0)
				return 1;
			offset = sp.last + 1;
			calls++;
		} while (sp.more);
		t[r] = bench_now_ms() - t0;
	}
	ms = median(t, RUNS);
	mbs = f.len / 1e6 / (ms / 1e3);
	printf("read_render[8MiB, all pages]: %.0f MB/s (median %.2f ms for %zu calls)\n", mbs, ms, calls);
	printf("ratio[read_render all pages / target 500 MB/s]: %.1fx\n", mbs / TARGET_MBS);

	/* The read tool's local path: walk, load from the page cache, hash for the record, render. */
	snprintf(dir, sizeof(dir), "/tmp/acp-bench-fs-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 1;
	path = xasprintf("%s/big.c", dir);
	if ((fp = fopen(path, "w")) == NULL || fwrite(f.data, 1, f.len, fp) != f.len || fclose(fp) != 0)
		return 1;
	err_clear(&e);
	if (ws_roots_init(&roots, dir, NULL, &e) != 0)
		return 1;
	ws_obs_init(&obs);
	for (int r = 0; r < RUNS; r++) {
		struct buf data;
		struct ws_path where;
		double t0 = bench_now_ms();

		buf_init(&data);
		out.len = 0;
		if (ws_fs_load(&roots, "big.c", WS_READ_MAX, &where, &data, &e) != 0 ||
		    ws_fs_read_render("big.c", data.data, data.len, 1, 0, &out, &sp, &e) != 0)
			return 1;
		ws_obs_note(&obs, where.abs, data.data, data.len);
		t[r] = bench_now_ms() - t0;
		ws_path_free(&where);
		buf_free(&data);
	}
	ms = median(t, RUNS);
	printf("read_tool_local[8MiB: load + hash + render]: %.0f MB/s (median %.3f ms)\n",
	    f.len / 1e6 / (ms / 1e3), ms);
	for (int r = 0; r < RUNS; r++) {
		double t0 = bench_now_ms();
		volatile uint64_t h = hash64(f.data, f.len);

		(void)h;
		t[r] = bench_now_ms() - t0;
	}
	ms = median(t, RUNS);
	printf("hash[8MiB]: %.0f MB/s (median %.3f ms)\n", f.len / 1e6 / (ms / 1e3), ms);
	ws_obs_free(&obs);
	ws_roots_free(&roots);
	unlink(path);
	rmdir(dir);
	free(path);

	/* edit: one unique match at the very end (the whole file is searched and copied). */
	for (int r = 0; r < RUNS; r++) {
		double t0 = bench_now_ms();

		if (ws_fs_edit("f", f.data, f.len, "UNIQUE_NEEDLE_AT_THE_END();", "replaced();", 0, &ed, &e) != 0)
			return 1;
		t[r] = bench_now_ms() - t0;
		ws_edit_free(&ed);
	}
	ms = median(t, RUNS);
	printf("edit[8MiB, one match at the end]: %.2f ms (median of %d)\n", ms, RUNS);
	printf("ratio[edit / target 30 ms]: %.2fx the time\n", ms / TARGET_EDIT_MS);
	/* replace_all of a frequent word. */
	for (int r = 0; r < RUNS; r++) {
		double t0 = bench_now_ms();

		if (ws_fs_edit("f", f.data, f.len, "caf\xc3\xa9", "CAF\xc3\x89", 1, &ed, &e) != 0)
			return 1;
		t[r] = bench_now_ms() - t0;
		if (r == 0)
			calls = ed.count;
		ws_edit_free(&ed);
	}
	ms = median(t, RUNS);
	printf("edit[8MiB, replace_all, %zu matches]: %.2f ms (median of %d)\n", calls, ms, RUNS);
	/* The diff the edit presents: hunks, then at the edit budget (every 300th line changed). */
	{
		struct ws_edit one, many;
		struct ws_diff d;
		const char *labels[2] = { "one edit at the end", "every 300th line changed" };
		struct buf b;
		size_t nth = 0;

		if (ws_fs_edit("f", f.data, f.len, "UNIQUE_NEEDLE_AT_THE_END();", "replaced();", 0, &one, &e) != 0)
			return 1;
		buf_init(&b);
		for (const char *q = f.data, *nl; (nl = memchr(q, '\n', (size_t)(f.data + f.len - q))) != NULL; q = nl + 1) {
			if (++nth % 300 == 0)
				buf_puts(&b, "changed\n");
			else
				buf_append(&b, q, (size_t)(nl + 1 - q));
		}
		many.text = b;
		for (int k = 0; k < 2; k++) {
			const struct buf *nt = k ? &many.text : &one.text;

			for (int r = 0; r < 5; r++) {
				double t0 = bench_now_ms();

				ws_diff_make(&d, f.data, f.len, nt->data, nt->len);
				t[r] = bench_now_ms() - t0;
				calls = d.nhunks;
				ws_diff_free(&d);
			}
			printf("diff[8MiB, %s]: %.1f ms (median of 5; %zu hunks)\n", labels[k], median(t, 5), calls);
		}
		ws_edit_free(&one);
		buf_free(&b);
	}
	buf_free(&out);
	buf_free(&f);
	return 0;
}
