/* Test helpers. */
#include "tests/helpers.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"

/* What the logger says while no capture runs goes to stderr, labelled: it comes from a test. */
static const char test_log_label[] = "  (logged by the test under way) ";
static struct buf test_log_captured;
static int test_log_capturing;

static void
test_log_sink(void *arg, const char *line, size_t len)
{
	(void)arg;
	if (test_log_capturing) {
		buf_append(&test_log_captured, line, len);
		return;
	}
	/* Best effort, like the logger itself. */
	if (write(STDERR_FILENO, test_log_label, sizeof(test_log_label) - 1) < 0 ||
	    write(STDERR_FILENO, line, len) < 0)
		return;
}

void
test_log_install(void)
{
	log_set_sink(test_log_sink, NULL);
}

void
test_log_capture_start(void)
{
	buf_free(&test_log_captured);
	buf_init(&test_log_captured);
	test_log_capturing = 1;
}

char *
test_log_capture_stop(void)
{
	test_log_capturing = 0;
	return buf_steal(&test_log_captured);
}

void
test_mkdtemp(char *buf, size_t size)
{
	snprintf(buf, size, "/tmp/acp-check-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(buf));
}

void
test_mutate(char *m, size_t len, int times, unsigned *seed, const char *pool)
{
	size_t n = strlen(pool);

	for (int j = 0; j < times && len; j++) {
		*seed = *seed * 1103515245u + 12345u;
		size_t at = (*seed >> 8) % len;
		*seed = *seed * 1103515245u + 12345u;
		m[at] = pool[(*seed >> 8) % n];
	}
}

void
test_rmtree(const char *path)
{
	pid_t pid = fork();

	if (pid == 0) {
		execlp("rm", "rm", "-rf", path, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

void
test_write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

size_t
test_each_scenario_log(void (*fn)(const char *path, void *arg), void *arg)
{
	DIR *d = opendir("scenarios");
	struct dirent *de;
	size_t n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL) {
		char dir[512], path[1024];
		DIR *sd;
		struct dirent *fe;
		if (de->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "scenarios/%s/expected/sessions", de->d_name);
		if ((sd = opendir(dir)) == NULL)
			continue;
		while ((fe = readdir(sd)) != NULL) {
			if (strstr(fe->d_name, ".jsonl") == NULL)
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, fe->d_name);
			fn(path, arg);
			n++;
		}
		closedir(sd);
	}
	closedir(d);
	return n;
}

char *
test_read_file(const char *path, size_t *len)
{
	struct buf b;

	buf_init(&b);
	if (buf_append_file(&b, path) < 0) {
		buf_free(&b);
		return NULL;
	}
	if (len)
		*len = b.len;
	return buf_steal(&b);
}

void
test_runtime_start(struct test_runtime *t, const char *recording)
{
	char path[160];
	struct err e;

	memset(t, 0, sizeof(*t));
	test_mkdtemp(t->dir, sizeof(t->dir));
	snprintf(t->state, sizeof(t->state), "%s/state", t->dir);
	snprintf(path, sizeof(path), "%s/rec.json", t->dir);
	test_write_file(path, recording, strlen(recording));
	err_clear(&e);
	ck_assert_int_eq(sess_env_init(&t->env, t->state, SESS_SYNC_NONE, 1, NULL, &e), 0);
	runq_init(&t->q, NULL);
	sess_store_init(&t->store, &t->env);
	sess_corpus_init(&t->corpus, &t->env);
	ck_assert_int_eq(sess_corpus_scan(&t->corpus, &e), 0);
	t->model = model_replay_new(&t->q, path, &e);
	ck_assert_msg(t->model != NULL, "%s", e.msg);
	agent_rt_init(&t->rt, &t->q, &t->env, &t->store, &t->corpus, t->model);
}

void
test_runtime_finish(struct test_runtime *t)
{
	agent_rt_shutdown(&t->rt);
	runq_drain(&t->q);
	agent_rt_free(&t->rt);
	model_free(t->model);
	sess_store_free(&t->store);
	sess_corpus_free(&t->corpus);
	sess_env_free(&t->env);
	runq_stop(&t->q);
	test_rmtree(t->dir);
}
