/*
 * ws-search: workspace/glob and workspace/grep from the shell, for tests/search_diff.sh.
 *   ws-search glob ROOT DIR PATTERN          every match in walk order, each path then a NUL
 *   ws-search grep ROOT PATH PATTERN [GLOB]  every matching line as `grep -rnZ` prints it:
 *                                            path, NUL, line number, ':', the line, newline
 *   ws-search glob-text ROOT DIR PATTERN [deterministic]
 *   ws-search grep-text ROOT PATH PATTERN [GLOB]   the result texts the tools return
 * Exit 0, 1 on an error (printed as "CODE: message" on stderr), 2 on bad usage.
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "workspace/glob.h"
#include "workspace/grep.h"

static int
print_path(void *arg, const struct ws_walk_file *f)
{
	(void)arg;
	fwrite(f->rel, 1, strlen(f->rel) + 1, stdout);
	return 0;
}

static int
print_line(void *arg, const struct ws_grep_hit *h)
{
	(void)arg;
	fwrite(h->rel, 1, strlen(h->rel) + 1, stdout);
	printf("%zu:", h->line_no);
	fwrite(h->line, 1, h->len, stdout);
	putchar('\n');
	return 0;
}

int
main(int argc, char **argv)
{
	struct err e;
	struct buf out;
	int rc;

	if (argc < 5 || argc > 6) {
		fprintf(stderr, "usage: ws-search glob|grep|glob-text|grep-text ROOT PATH PATTERN [GLOB|deterministic]\n");
		return 2;
	}
	err_clear(&e);
	buf_init(&out);
	const char *cmd = argv[1];
	struct ws_glob_opts go = { argv[2], argv[3], argv[4], argc == 6, NULL };
	struct ws_grep_opts ro = { argv[2], argv[3], argv[4], argc == 6 ? argv[5] : NULL, NULL };
	if (strcmp(cmd, "glob") == 0)
		rc = ws_glob_each(&go, print_path, NULL, &e);
	else if (strcmp(cmd, "grep") == 0)
		rc = ws_grep_each(&ro, print_line, NULL, &e);
	else if (strcmp(cmd, "glob-text") == 0)
		rc = ws_glob(&go, &out, &e);
	else if (strcmp(cmd, "grep-text") == 0)
		rc = ws_grep(&ro, &out, &e);
	else
		return 2;
	if (rc != 0) {
		fprintf(stderr, "%s: %s\n", err_tool(e.code), e.msg);
		return 1;
	}
	if (out.len)
		printf("%s\n", out.data);
	buf_free(&out);
	return 0;
}
