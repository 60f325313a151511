/*
 * Start-up and session/list against the corpus size (docs/contract.md §5.6, §12): the real binary, a state
 * directory of N stored root sessions written directly (a header and one prompt each).
 *
 *   bench_index AGENT [N]     N defaults to 100000; prints "startup[...]", "ratio[...]",
 *                            "list_first[...]", "list_all[...]" lines
 *
 * Each run starts the agent, times initialize, then the first session/list page (which waits for
 * the index to be complete), the first page again (steady state) and every page through to the
 * end, then closes stdin. The first run finds no index file (a first start); start-up is then the
 * median of 11 runs with the index file the first one left.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/util.h"

#define RUNS 11

struct agent_proc {
	pid_t pid;
	int in, out;
	char buf[1 << 20];
	size_t have;
};

/* Writes n root sessions: header plus one user prompt, distinct activity times. */
static void
bench_generate(const char *state, int n)
{
	char path[512], line[1024];

	snprintf(path, sizeof(path), "%s/sessions", state);
	mkdir(path, 0700);
	for (int i = 0; i < n; i++) {
		char id[40];
		snprintf(id, sizeof(id), "00000000-0000-4000-8000-3%011x", i);
		snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, id);
		int len = snprintf(line, sizeof(line),
		    "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":%d,\"cwd\":\"/w/%d\","
		    "\"delegationDepth\":0}\n"
		    "{\"seq\":0,\"time\":%d,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":"
		    "\"text\",\"text\":\"session number %d\"}],\"source\":{\"kind\":\"user\"}}}\n",
		    id, 1000 + i, i % 7, 2000000 + (i * 7919) % 1000003, i);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, line, (size_t)len) != len) {
			perror(path);
			exit(1);
		}
		close(fd);
	}
}

static int
index_spawn(struct agent_proc *p, const char *agent, const char *state, const char *model)
{
	int in[2], out[2];

	if (pipe(in) < 0 || pipe(out) < 0)
		return -1;
	p->pid = fork();
	if (p->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 2);
		close(in[1]);
		close(out[0]);
		if (strcmp(model, "openai") == 0) {	/* what users with a key run; nothing is asked of it */
			setenv("ACP_AGENT_API_KEY", "sk-bench-not-a-key", 1);
			setenv("ACP_AGENT_BASE_URL", "http://127.0.0.1:9/v1", 1);
		}
		execl(agent, agent, "--model", model, "--state-dir", state, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->in = in[1];
	p->out = out[0];
	p->have = 0;
	return 0;
}

/* Sends one request and waits for the response line with that id; returns it (new ref) or NULL. */
static json_t *
bench_call(struct agent_proc *p, int id, const char *method, const char *params)
{
	char req[1024];
	int len = snprintf(req, sizeof(req), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}\n", id,
	    method, params);

	if (write(p->in, req, (size_t)len) != len)
		return NULL;
	for (;;) {
		char *nl;
		while ((nl = memchr(p->buf, '\n', p->have)) != NULL) {
			size_t l = (size_t)(nl - p->buf);
			json_t *j = json_loadb(p->buf, l, 0, NULL);
			memmove(p->buf, nl + 1, p->have - l - 1);
			p->have -= l + 1;
			if (j && json_integer_value(json_object_get(j, "id")) == id)
				return j;
			json_decref(j);
		}
		struct pollfd pf = { p->out, POLLIN, 0 };
		if (poll(&pf, 1, 120000) <= 0 || p->have == sizeof(p->buf))
			return NULL;
		ssize_t n = read(p->out, p->buf + p->have, sizeof(p->buf) - p->have);
		if (n <= 0)
			return NULL;
		p->have += (size_t)n;
	}
}

static void
bench_stop(struct agent_proc *p)
{
	int st;

	close(p->in);
	close(p->out);
	waitpid(p->pid, &st, 0);
}

struct bench_run {
	double init, first, again, all;
	size_t listed;
	long rss_kb;		/* at initialize's answer */
	int curl;		/* libcurl mapped by then */
};

/* Whether the process has libcurl mapped. */
static int
bench_has_curl(pid_t pid)
{
	char path[64], line[512];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "libcurl") != NULL;
	fclose(f);
	return found;
}

/* One process: initialize, then (when pages) the listing figures. */
static int
bench_one(const char *agent, const char *state, const char *model, int pages, struct bench_run *r)
{
	static struct agent_proc p;
	double t0;
	json_t *j;

	if (index_spawn(&p, agent, state, model) < 0)
		return -1;
	t0 = bench_now_ms();
	j = bench_call(&p, 1, "initialize", "{\"protocolVersion\":1,\"clientCapabilities\":{}}");
	r->init = bench_now_ms() - t0;
	r->rss_kb = bench_proc_kb(p.pid, "VmRSS:");
	r->curl = bench_has_curl(p.pid);
	json_decref(j);
	if (j == NULL || !pages) {
		bench_stop(&p);
		return j ? 0 : -1;
	}
	t0 = bench_now_ms();
	j = bench_call(&p, 2, "session/list", "{}");
	r->first = bench_now_ms() - t0;
	json_decref(j);
	t0 = bench_now_ms();
	j = bench_call(&p, 3, "session/list", "{}");
	r->again = bench_now_ms() - t0;
	json_decref(j);
	r->listed = 0;
	t0 = bench_now_ms();
	char params[256] = "{}";
	for (int id = 4; j; id++) {
		j = bench_call(&p, id, "session/list", params);
		if (j == NULL)
			break;
		json_t *res = json_object_get(j, "result");
		r->listed += json_array_size(json_object_get(res, "sessions"));
		const char *cur = json_string_value(json_object_get(res, "nextCursor"));
		if (cur == NULL) {
			json_decref(j);
			break;
		}
		snprintf(params, sizeof(params), "{\"cursor\":\"%s\"}", cur);
		json_decref(j);
	}
	r->all = bench_now_ms() - t0;
	bench_stop(&p);
	return 0;
}

static double
bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return v[n / 2];
}

/* Median start-up over RUNS processes on state; the last one's RSS and libcurl in *last. */
static double
bench_startup(const char *agent, const char *state, const char *model, struct bench_run *last)
{
	double t[RUNS];
	struct bench_run r;

	for (int i = 0; i < RUNS; i++) {
		if (bench_one(agent, state, model, 0, &r) < 0)
			return -1;
		t[i] = r.init;
	}
	if (last)
		*last = r;
	return bench_median(t, RUNS);
}

int
main(int argc, char **argv)
{
	char empty[] = "/tmp/acp-bench-idx0-XXXXXX", full[] = "/tmp/acp-bench-idxN-XXXXXX", cmd[256];
	int n = argc > 2 ? atoi(argv[2]) : 100000;
	double t0;
	struct bench_run cold, r;

	if (argc < 2) {
		fprintf(stderr, "usage: bench_index AGENT [N]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (mkdtemp(empty) == NULL || mkdtemp(full) == NULL)
		return 1;
	t0 = bench_now_ms();
	bench_generate(full, n);
	fprintf(stderr, "bench_index: %d sessions written in %.0f ms\n", n, bench_now_ms() - t0);
	/* The first start finds no index file: it builds one (the list waits for that). */
	if (bench_one(argv[1], full, "builtin", 1, &cold) < 0)
		return 1;
	struct bench_run b0, o0;
	double s0 = bench_startup(argv[1], empty, "builtin", &b0);
	double sn = bench_startup(argv[1], full, "builtin", NULL);
	double so = bench_startup(argv[1], empty, "openai", &o0);
	printf("startup[0 stored]: %.2f ms median of %d\n", s0, RUNS);
	if (s0 > 0 && so > 0)
		printf("startup[--model openai]: %.2f ms median of %d, %ld kB RSS at initialize, libcurl %s by then "
		    "(builtin: %.2f ms, %ld kB); ratio %.2fx (target: the same as builtin)\n", so, RUNS, o0.rss_kb,
		    o0.curl ? "loaded" : "not loaded", s0, b0.rss_kb, so / s0);
	printf("startup[%d stored]: %.2f ms median of %d (first start, no index file: %.2f ms)\n", n, sn, RUNS,
	    cold.init);
	if (s0 > 0 && sn > 0)
		printf("ratio[startup %d stored / 0 stored]: %.2fx\n", n, sn / s0);
	if (bench_one(argv[1], full, "builtin", 1, &r) == 0) {
		printf("list_first[%d roots]: %.2f ms after start-up (waits for the index; %.0f ms with no index "
		    "file), %.2f ms again\n", n, r.first, cold.first, r.again);
		printf("list_all[%d roots]: %.0f ms for every page (%zu listed)\n", n, r.all, r.listed);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", empty, full);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_index: cleanup failed\n");
	return 0;
}
