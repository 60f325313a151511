/* Shared test helpers: temp directories and file helpers. */
#ifndef TESTS_HELPERS_H
#define TESTS_HELPERS_H

#include <check.h>
#include <stddef.h>

#include "agent/agent.h"

/* A runtime over a temp state dir and a replay recording, driven without a loop (runq_drain). */
struct test_runtime {
	char dir[64], state[128];
	struct runq q;
	struct sess_env env;
	struct sess_store store;
	struct sess_corpus corpus;
	struct agent_rt rt;
	struct model *model;
};

void test_runtime_start(struct test_runtime *t, const char *recording);
/* Shuts the agents down and frees everything; the caller's toolbox may be freed after. */
void test_runtime_finish(struct test_runtime *t);

/* Creates a fresh temp dir into buf (size >= 64). */
void test_mkdtemp(char *buf, size_t size);
void test_rmtree(const char *path);
/* Overwrites `times` random bytes of m[0..len) with bytes of pool (NUL-terminated); *seed steps
 * a fixed LCG, so a failing mutation is reproducible. */
void test_mutate(char *m, size_t len, int times, unsigned *seed, const char *pool);
void test_write_file(const char *path, const char *data, size_t len);
char *test_read_file(const char *path, size_t *len);	/* owned, NUL-terminated */
/* Calls fn(path, arg) for every committed scenario log (every .jsonl under scenarios/NAME/expected/sessions,
 * from the project's root); returns how many. */
size_t test_each_scenario_log(void (*fn)(const char *path, void *arg), void *arg);

/*
 * The logger in tests: test_log_install (check_main does it) labels every line on stderr as the
 * test's. A test that provokes a log line on purpose captures it between start and stop and
 * asserts on it; stop returns the lines (owned, "" for none) and labels again.
 */
void test_log_install(void);
void test_log_capture_start(void);
char *test_log_capture_stop(void);

Suite *reader_suite(void);
Suite *rpc_suite(void);
Suite *id_suite(void);
Suite *log_suite(void);
Suite *repair_suite(void);
Suite *corpus_suite(void);
Suite *index_suite(void);
Suite *replay_suite(void);
Suite *toolbox_suite(void);
Suite *updates_suite(void);
Suite *agent_suite(void);
Suite *conv_suite(void);
Suite *base_suite(void);
Suite *subagent_suite(void);
Suite *compose_suite(void);
Suite *git_suite(void);
Suite *sse_suite(void);
Suite *openai_suite(void);
Suite *team_suite(void);
Suite *toolbox_texts_suite(void);
Suite *outbound_suite(void);
Suite *permit_suite(void);
Suite *mcp_suite(void);
Suite *workspace_suite(void);
Suite *search_suite(void);
Suite *grep_hostile_suite(void);
Suite *proc_suite(void);
Suite *mcp_text_suite(void);
Suite *mcp_http_suite(void);
Suite *chat_suite(void);
Suite *record_suite(void);
Suite *images_suite(void);

#endif
