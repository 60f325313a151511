/*
 * session/load of a 100 MB log (docs/decisions.md, "Loading at scan speed"): the response time with a client that reads as fast as it
 * can, against `cat file > /dev/null` in the same run; peak RSS during the load and RSS once it is
 * done; and the longest gap in ANOTHER session's traffic while the load runs: a second session is
 * prompted over and over (the builtin model answers at once; a fresh one every 20 prompts), so any
 * time the loop spends blocked shows as a gap between two of its messages. The same gap without a
 * load is the baseline.
 *
 *   bench_load AGENT [RUNS]
 *   bench_load --write FILE [COMPACT_BYTES]	(the log alone, to profile a load by hand)
 * With BENCH_LOAD_LOG=FILE the agents log at info there: each load's read, rebuild and replay times.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/util.h"

#define LOG_BYTES (100L * 1000 * 1000)
#define SID "00000000-0000-4000-8000-00000000000a"

struct child {
	pid_t pid;
	int in, out;
	char *buf;
	size_t start, have, cap;	/* buf[start, have): read, not yet taken */
	unsigned long long bytes;	/* read since spawn */
};

/* The session log: turns of a user message, a step with text and a tool call, the call and its
 * result, a step with a longer answer; every text its own (no value repeats line to line). */
static long
write_log(const char *path, long compact_bytes)
{
	static const char *const words[] = { "the", "loop", "session", "replay", "of", "and", "a", "file", "to",
		"agent", "reads", "writes", "tool", "result", "with", "parse", "event", "line", "is", "on" };
	FILE *f = fopen(path, "w");
	long bytes = 0, seq = 0, since = 0;
	unsigned r = 12345;
	char text[4096], res[4096];

	if (f == NULL)
		exit(1);
	bytes += fprintf(f, "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":1,\"cwd\":\"/tmp\",\"delegationDepth\":0}\n", SID);
	bytes += fprintf(f, "{\"seq\":%ld,\"time\":2,\"type\":\"session/created\",\"data\":{\"mode\":\"default\",\"model\":\"builtin\"}}\n", seq++);
#define TEXT(buf, nwords) do { size_t o_ = 0; for (int w_ = 0; w_ < (nwords); w_++) { r = r * 1103515245u + 12345u; \
	o_ += (size_t)snprintf(buf + o_, sizeof(buf) - o_, "%s%s", w_ ? " " : "", words[(r >> 16) % 20]); } } while (0)
	for (long turn = 1; bytes < LOG_BYTES; turn++) {
		long t = 1000 + seq;
		bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"turn/start\",\"data\":{\"turn\":%ld}}\n", seq, t, turn), seq++;
		TEXT(text, 30);
		bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"user/message\",\"data\":{\"id\":\"m%ld\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"source\":{\"kind\":\"user\"}}}\n", seq, t, turn, text), seq++;
		bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"step/start\",\"data\":{\"turn\":%ld,\"step\":1}}\n", seq, t, turn), seq++;
		TEXT(text, 40);
		bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"assistant/message\",\"data\":{\"turn\":%ld,\"step\":1,\"id\":\"a%ld\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"},{\"type\":\"tool-call\",\"callId\":\"call_%ld\",\"name\":\"grep\",\"arguments\":\"{\\\"pattern\\\":\\\"foo%ld\\\",\\\"path\\\":\\\"src\\\"}\"}],\"finish\":\"tool-calls\"}}\n", seq, t, turn, turn, text, turn, turn), seq++;
		bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"tool/call\",\"data\":{\"turn\":%ld,\"step\":1,\"callId\":\"call_%ld\",\"name\":\"grep\",\"arguments\":\"{\\\"pattern\\\":\\\"foo%ld\\\",\\\"path\\\":\\\"src\\\"}\"}}\n", seq, t, turn, turn, turn), seq++;
		size_t o = 0;
		for (int k = 0; k < 20; k++) {
			TEXT(text, 8);
			o += (size_t)snprintf(res + o, sizeof(res) - o, "%ssrc/f%d.c:%ld: %s", k ? "\\n" : "", k, turn * 3 + k, text);
		}
		bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"tool/result\",\"data\":{\"turn\":%ld,\"step\":1,\"callId\":\"call_%ld\",\"name\":\"grep\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"isError\":false}}\n", seq, t, turn, turn, res), seq++;
		bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"step/end\",\"data\":{\"turn\":%ld,\"step\":1}}\n", seq, t, turn), seq++;
		bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"step/start\",\"data\":{\"turn\":%ld,\"step\":2}}\n", seq, t, turn), seq++;
		TEXT(text, 120);
		bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"assistant/message\",\"data\":{\"turn\":%ld,\"step\":2,\"id\":\"b%ld\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"finish\":\"stop\"}}\n", seq, t, turn, turn, text), seq++;
		bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"step/end\",\"data\":{\"turn\":%ld,\"step\":2}}\n", seq, t, turn), seq++;
		bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"turn/end\",\"data\":{\"turn\":%ld,\"reason\":{\"kind\":\"completed\"}}}\n", seq, t, turn), seq++;
		/* As a session under docs/contract.md §19 compacts: a summary through the turn just ended. */
		if (compact_bytes && bytes - since >= compact_bytes) {
			bytes += fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"context/compacted\",\"data\":{\"id\":\"compaction-%ld\",\"summary\":\"The user and the agent searched the sources, turn after turn, up to turn %ld.\",\"through\":%ld}}\n",
			    seq, t, turn, turn, seq - 1), seq++;
			since = bytes;
		}
	}
#undef TEXT
	fclose(f);
	return bytes;
}

static void
spawn(struct child *c, const char *agent, const char *state)
{
	int in[2], out[2];

	if (pipe(in) < 0 || pipe(out) < 0)
		exit(1);
	c->pid = fork();
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);	/* else the agent holds its own stdin open: no EOF */
		close(out[0]);
		close(out[1]);
		/* BENCH_LOAD_LOG=FILE: the agent's info log (how long each step of a load took) */
		const char *log = getenv("BENCH_LOAD_LOG");
		int errfd = open(log ? log : "/dev/null", log ? O_WRONLY | O_CREAT | O_APPEND : O_WRONLY, 0600);
		dup2(errfd, 2);
		execl(agent, agent, "--model", "builtin", "--sync", "none", "--log-level", log ? "info" : "warn", "--state-dir",
		    state, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in = in[1];
	c->out = out[0];
	c->start = c->have = 0;
	c->bytes = 0;
	c->cap = 1 << 20;
	c->buf = malloc(c->cap);
}

static void
send_line(struct child *c, const char *line)
{
	if (write(c->in, line, strlen(line)) < 0 || write(c->in, "\n", 1) < 0)
		exit(1);
}

/* The next whole line (NUL-terminated in place, valid until the next call), or NULL on EOF. The
 * taken bytes are moved out only when the buffer must be refilled: a fast client, not one that
 * copies its buffer once a line. */
static char *
next_line(struct child *c, size_t *consumed)
{
	char *nl;

	c->start += *consumed;
	*consumed = 0;
	while ((nl = memchr(c->buf + c->start, '\n', c->have - c->start)) == NULL) {
		if (c->start > 0) {
			memmove(c->buf, c->buf + c->start, c->have - c->start);
			c->have -= c->start;
			c->start = 0;
		}
		if (c->have == c->cap)
			c->buf = realloc(c->buf, c->cap *= 2);
		struct pollfd p = { c->out, POLLIN, 0 };
		if (poll(&p, 1, 120000) <= 0)
			return NULL;
		ssize_t n = read(c->out, c->buf + c->have, c->cap - c->have);
		if (n <= 0)
			return NULL;
		c->have += (size_t)n;
		c->bytes += (unsigned long long)n;
	}
	*nl = '\0';
	*consumed = (size_t)(nl - (c->buf + c->start)) + 1;
	return c->buf + c->start;
}

static int
is_response(const char *line, long id)
{
	char want[48];

	snprintf(want, sizeof(want), "{\"jsonrpc\":\"2.0\",\"id\":%ld,", id);
	return strncmp(line, want, strlen(want)) == 0;
}

static void
prompt(struct child *c, const char *sid, long id)
{
	char line[512];

	snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"ping\"}]}}", id, sid);
	send_line(c, line);
}

struct run {
	double load_ms;		/* session/load sent to its response read */
	double gap_ms;		/* the longest gap in the other session's messages meanwhile */
	long prompts;		/* the other session's prompts answered meanwhile */
	unsigned long long replay;	/* bytes read meanwhile */
	long peak_kb, after_kb;
};

/*
 * One process: a second session B is made and prompted in a loop; with load, session/load of the
 * big log is sent at t0 and the figures are taken until its response (without, for as long as the
 * load took, the baseline). B's traffic is told apart by its session id near the line's start.
 */
static void
one_run(const char *agent, const char *state, int load, int other, double window_ms, struct run *out)
{
	struct child c;
	size_t used = 0;
	char *line, sidb[64] = "", req[512];
	long next = 100, waiting;
	double t0, last, now;

	memset(out, 0, sizeof(*out));
	spawn(&c, agent, state);
	send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}");
	while ((line = next_line(&c, &used)) && !is_response(line, 1))
		;
	send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"/tmp\",\"mcpServers\":[]}}");
	while ((line = next_line(&c, &used)) && !is_response(line, 2))
		;
	char *p = line ? strstr(line, "\"sessionId\":\"") : NULL;
	if (p == NULL)
		exit(1);
	snprintf(sidb, sizeof(sidb), "%.36s", p + 13);
	prompt(&c, sidb, 3);	/* warm */
	while ((line = next_line(&c, &used)) && !is_response(line, 3))
		;
	unsigned long long b0 = c.bytes;
	t0 = last = bench_now_ms();
	if (load) {
		snprintf(req, sizeof(req), "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"session/load\",\"params\":{\"sessionId\":\"%s\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}", SID);
		send_line(&c, req);
	}
	waiting = -1;
	if (other)
		prompt(&c, sidb, waiting = next++);
	for (;;) {
		if ((line = next_line(&c, &used)) == NULL)
			exit(1);
		now = bench_now_ms();
		if (load && is_response(line, 10)) {
			out->load_ms = now - t0;
			break;
		}
		/* B's message: its update carries sidb near the start, its response is the waited id */
		int mine = is_response(line, waiting) || (strlen(line) > 120 && memmem(line, 120, sidb, 36) != NULL);
		if (!mine)
			continue;
		if (now - last > out->gap_ms)
			out->gap_ms = now - last;
		last = now;
		if (is_response(line, waiting)) {
			if ((p = strstr(line, "\"sessionId\":\"")) != NULL)
				snprintf(sidb, sizeof(sidb), "%.36s", p + 13);	/* a fresh B */
			else
				out->prompts++;
			if (!load && now - t0 >= window_ms) {
				waiting = -1;	/* answered: nothing is in flight */
				break;
			}
			/* A prompt's cost grows with its session's history (the runtime rebuilds the
			 * conversation): a fresh B every 20 prompts keeps B's own cost flat. */
			if (out->prompts % 20 == 19 && strstr(line, "stopReason")) {
				snprintf(req, sizeof(req), "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"session/new\",\"params\":{\"cwd\":\"/tmp\",\"mcpServers\":[]}}", next);
				send_line(&c, req);
				waiting = next++;
			} else {
				prompt(&c, sidb, waiting = next++);
			}
		}
	}
	now = bench_now_ms();
	if (now - last > out->gap_ms)
		out->gap_ms = now - last;
	out->replay = c.bytes - b0;
	while (waiting >= 0 && (line = next_line(&c, &used)) && !is_response(line, waiting))
		;
	out->peak_kb = bench_proc_kb(c.pid, "VmHWM:");
	usleep(300000);
	out->after_kb = bench_proc_kb(c.pid, "VmRSS:");
	close(c.in);
	while (next_line(&c, &used))
		;
	waitpid(c.pid, NULL, 0);
	close(c.out);
	free(c.buf);
}

/*
 * The physical limit's second half: bytes as many as the replay's, in lines of about its size,
 * written into a pipe by one process and read by this client the way it reads a replay (whole
 * lines, as they come). Returns the milliseconds.
 */
static double
pipe_ms(unsigned long long bytes)
{
	static char chunk[1 << 20];
	struct child c;
	size_t used = 0;
	int p[2];
	double t0;

	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = i % 640 == 639 ? '\n' : 'x';
	if (pipe(p) < 0)
		exit(1);
	t0 = bench_now_ms();
	c.pid = fork();
	if (c.pid == 0) {
		close(p[0]);
		for (unsigned long long left = bytes; left > 0;) {
			size_t n = left < sizeof(chunk) ? (size_t)left : sizeof(chunk);
			ssize_t w = write(p[1], chunk, n);
			if (w <= 0)
				_exit(1);
			left -= (unsigned long long)w;
		}
		_exit(0);
	}
	close(p[1]);
	c.out = p[0];
	c.start = c.have = 0;
	c.bytes = 0;
	c.cap = 1 << 20;
	c.buf = malloc(c.cap);
	while (next_line(&c, &used))
		;
	double ms = bench_now_ms() - t0;
	waitpid(c.pid, NULL, 0);
	close(c.out);
	free(c.buf);
	return ms;
}

static int
cmp_run_load(const void *a, const void *b)
{
	double x = ((const struct run *)a)->load_ms, y = ((const struct run *)b)->load_ms;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	char dir[] = "/tmp/acp-bench-load-XXXXXX", path[256], cmd[600];
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	struct run r[16], alone[16], base;
	double cat[16];
	long bytes;

	if (argc >= 3 && strcmp(argv[1], "--write") == 0) {	/* the log alone, for a profiler */
		printf("%ld bytes\n", write_log(argv[2], argc > 3 ? atol(argv[3]) : 0));
		return 0;
	}
	if (argc < 2 || runs < 1 || runs > 16) {
		fprintf(stderr, "usage: bench_load AGENT [RUNS]\n       bench_load --write FILE [COMPACT_BYTES]\n");
		return 2;
	}
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(path, sizeof(path), "%s/sessions", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", dir, SID);
	bytes = write_log(path, 0);
	snprintf(cmd, sizeof(cmd), "cat %s > /dev/null", path);
	if (system(cmd) != 0)	/* warm the page cache */
		return 1;
	for (int i = 0; i < runs; i++) {
		double t0 = bench_now_ms();
		if (system(cmd) != 0)
			return 1;
		cat[i] = bench_now_ms() - t0;
		one_run(argv[1], dir, 1, 0, 0, &alone[i]);
		one_run(argv[1], dir, 1, 1, 0, &r[i]);
	}
	qsort(cat, (size_t)runs, sizeof(double), bench_cmp_double);
	qsort(r, (size_t)runs, sizeof(r[0]), cmp_run_load);
	qsort(alone, (size_t)runs, sizeof(alone[0]), cmp_run_load);
	const struct run *m = &r[runs / 2], *a = &alone[runs / 2];
	one_run(argv[1], dir, 0, 1, m->load_ms, &base);
	printf("load: session/load of a %ld-byte log: %.0f ms (median of %d: min %.0f, max %.0f; %.0f MB/s of log; %llu bytes of replay read)\n",
	    bytes, a->load_ms, runs, alone[0].load_ms, alone[runs - 1].load_ms, bytes / a->load_ms / 1e3, a->replay);
	printf("ratio[load vs cat file > /dev/null]: %.1fx the time (cat median %.1f ms, %.0f MB/s)\n",
	    a->load_ms / cat[runs / 2], cat[runs / 2], bytes / cat[runs / 2] / 1e3);
	double pipes[16];
	for (int i = 0; i < runs; i++)
		pipes[i] = pipe_ms(a->replay);
	qsort(pipes, (size_t)runs, sizeof(double), bench_cmp_double);
	printf("ratio[load vs cat file plus the replay's bytes through a pipe]: %.1fx the time (%.1f + %.1f ms; target 3x)\n",
	    a->load_ms / (cat[runs / 2] + pipes[runs / 2]), cat[runs / 2], pipes[runs / 2]);
	printf("load: the same load while another session is prompted: %.0f ms\n", m->load_ms);
	printf("load: other session's longest gap during the load: %.1f ms (%ld prompts answered meanwhile; runs:", m->gap_ms,
	    m->prompts);
	for (int i = 0; i < runs; i++)
		printf(" %.1f", r[i].gap_ms);
	printf(" ms); without a load %.1f ms (%ld prompts in %.0f ms)\n", base.gap_ms, base.prompts, m->load_ms);
	printf("load: peak RSS %ld kB during the load, %ld kB idle after it\n", a->peak_kb, a->after_kb);
	/* The same kind of log written by a session that compacts (every 400 kB of log, about what a
	 * 128k-token window holds): what a live session holds past its conversation. */
	long cbytes = write_log(path, 400000L);
	struct run comp[16];
	for (int i = 0; i < runs; i++)
		one_run(argv[1], dir, 1, 0, 0, &comp[i]);
	qsort(comp, (size_t)runs, sizeof(comp[0]), cmp_run_load);
	printf("load: a %ld-byte log that compacted every 400 kB: %.0f ms (median of %d: min %.0f, max %.0f); peak RSS %ld kB during the load, %ld kB idle after it\n",
	    cbytes, comp[runs / 2].load_ms, runs, comp[0].load_ms, comp[runs - 1].load_ms, comp[runs / 2].peak_kb,
	    comp[runs / 2].after_kb);
	printf("target: load under 400 ms (within 3x of cat plus the replay bytes); the other session's gap under 20 ms; peak / idle RSS under 48 / 16 MB plus the conversation since the latest compaction\n");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
