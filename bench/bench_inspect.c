/*
 * inspect of a 100 MB log (docs/contract.md §12: >= 100 MB/s, within 3x of wc -l on the same file).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "session/repair.h"

#define RUNS 7

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(void)
{
	char dir[] = "/tmp/acp-bench-inspect-XXXXXX", path[256], cmd[600];
	const char *id = "00000000-0000-4000-8000-000000000001";
	FILE *f;
	long bytes = 0, n = 0;
	struct sess_scan sc;
	struct sess_image img;
	struct err e;
	double t0, ours, wc;
	char text[161];

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(path, sizeof(path), "%s/%s.jsonl", dir, id);
	f = fopen(path, "w");
	bytes += fprintf(f, "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":1,\"cwd\":\"/w\",\"delegationDepth\":0}\n", id);
	memset(text, 'a', 160);
	text[160] = '\0';
	while (bytes < 100L * 1000 * 1000) {
		long turn = n / 4 + 1;
		/* Every message has its own text, as in a real log: no value repeats line to line. */
		int w = snprintf(text, sizeof(text), "message %ld: ", n);
		for (int i = w; i < 160; i++)
			text[i] = (char)('a' + (n * 7 + i) % 26);
		switch (n % 4) {
		case 0: bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"turn/start\",\"data\":{\"turn\":%ld}}\n", n, n, turn); break;
		case 1: bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"source\":{\"kind\":\"user\"}}}\n", n, n, text); break;
		case 2: bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"assistant/message\",\"data\":{\"turn\":%ld,\"step\":1,\"id\":\"a\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"finish\":\"stop\"}}\n", n, n, turn, text); break;
		default: bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"turn/end\",\"data\":{\"turn\":%ld,\"reason\":{\"kind\":\"completed\"}}}\n", n, n, turn); break;
		}
		n++;
	}
	fclose(f);
	/* wc -l is timed around system(), so its fork and exec count against it (about 1 ms); the
	 * figure is the median of RUNS of each, alternating, on a warm page cache. */
	snprintf(cmd, sizeof(cmd), "wc -l %s > /dev/null", path);
	if (system(cmd) != 0)	/* warm the page cache for both */
		return 1;
	double wcs[RUNS], our[RUNS];
	int rc = 0;
	for (int i = 0; i < RUNS; i++) {
		t0 = now_s();
		if (system(cmd) != 0)
			return 1;
		wcs[i] = now_s() - t0;
		err_clear(&e);
		t0 = now_s();
		rc |= sess_scan_file(path, NULL, &sc, &e);
		our[i] = now_s() - t0;
	}
	qsort(wcs, RUNS, sizeof(double), dbl_cmp);
	qsort(our, RUNS, sizeof(double), dbl_cmp);
	wc = wcs[RUNS / 2];
	ours = our[RUNS / 2];
	printf("inspect (scan): %.0f MB/s (median of %d: %.3f s, min %.3f, max %.3f; %ld bytes, %ld events, %s)\n",
	    bytes / ours / 1e6, RUNS, ours, our[0], our[RUNS - 1], bytes, sc.nevents, rc == 0 ? "valid" : e.msg);
	printf("ratio[inspect vs wc -l]: %.1fx the time (wc -l median %.3f s, %.0f MB/s)\n", ours / wc, wc,
	    bytes / wc / 1e6);
	/* What notice redelivery reads of a child: every line checked, the settlements kept; and, for a
	 * notice that is missing, a second read keeping three types (half of this file's lines). */
	static const char *const settled[] = { "subagent/settled", NULL };
	static const char *const keep[] = { "turn/start", "assistant/message", "subagent/settled", NULL };
	const char *const *keeps[] = { settled, keep };
	const char *what[] = { "subagent/settled (redelivery's first read)",
		"turn/start, assistant/message, subagent/settled (its second read, for a missing notice)" };
	for (int k = 0; k < 2; k++) {
		err_clear(&e);
		t0 = now_s();
		rc = sess_scan_file(path, keeps[k], &sc, &e);
		double kept = now_s() - t0;
		printf("inspect (scan keeping %s): %.0f MB/s (%.3f s, %zu events kept, %s)\n", what[k], bytes / kept / 1e6,
		    kept, json_array_size(sc.kept), rc == 0 ? "valid" : e.msg);
		sess_scan_free(&sc);
	}
	err_clear(&e);
	t0 = now_s();
	rc = sess_inspect_file(path, &img, &e);
	double full = now_s() - t0;
	printf("inspect (full image, every event parsed and kept, as load needs): %.0f MB/s (%.3f s)\n",
	    bytes / full / 1e6, full);
	printf("target: >= 100 MB/s and within 3x of wc -l\n");
	sess_image_free(&img);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
