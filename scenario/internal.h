/* What the scenario runner's files share: one scenario being played (struct scenario_run). */
#ifndef SCENARIO_INTERNAL_H
#define SCENARIO_INTERNAL_H

#include <limits.h>
#include <regex.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "base/buf.h"

#define SCENARIO_WAIT_MS 15000		/* a response, a waitFor, the agent's exit */
#define SCENARIO_MCP_LOG_WAIT_MS 5000	/* an mcpLog step's default wait */
#define SCENARIO_MCP_GONE_WAIT_MS 2000	/* after the agent exits, its mock-mcp processes have this long */
#define SCENARIO_MOCK_KEY "sk-test-not-a-real-key-42"

/* How every scenario of one `scenario run` is played (paths absolute, borrowed). */
struct scenario_opts {
	const char *agent;		/* the acp-agent to play against: ourselves unless --agent */
	const char *mock;		/* mock-openai, for scenarios with "mock"; NULL when absent */
	const char *mcp_mock;		/* mock-mcp, for scenarios with "mcp" */
	const char *traces;		/* --traces DIR, or NULL */
	int pretty;			/* --pretty: print the conversation, compare nothing */
	int update;			/* --update: rewrite expected/ */
};

/* One scenario being played. */
struct scenario_run {
	const struct scenario_opts *opts;
	json_t *mcp;			/* {name: {"script": abs path, "log": abs path}} from "mcp"; owned */
	pid_t mock_pid;
	int mock_port;
	const char *dir;		/* the scenario directory, absolute */
	char name[256];
	char tmp[256], state[300], cwd[300], home[300], config[320];
	regex_t *masks;			/* "mask": compiled EREs, nmasks of them; owned */
	size_t nmasks;
	json_t *script;			/* scenario.json; owned */
	pid_t pid;			/* the agent, 0 when none runs */
	int to_agent, from_agent;
	struct buf in;			/* unread agent output */
	json_t *lines;			/* every agent line (strings), all processes; owned */
	size_t wait_cursor;		/* waitFor scans lines from here */
	json_t *sessions;		/* session ids returned by session/new; owned */
	json_t *answers;		/* registered answers: {method, match, result|error, used}; owned */
	json_t *env_extra;		/* env set by restart steps, on top of the script's; owned */
	long next_id;
	FILE *trace;
	struct buf pretty_text;		/* agent text being streamed (pretty mode) */
	const char *pretty_kind;
	int pretty_between;		/* no prompt in flight: updates come from a runtime turn */
	char failure[1024];		/* the first failure; "" while all is well */
	char *diff;			/* the snapshot diff on a mismatch; owned */
};

/* One scenario's outcome, for the summary and JUnit. */
struct scenario_result {
	char *name;			/* owned: the directory's name */
	char *classname;		/* owned: its parent directory's name */
	int ok;
	double secs;
	char *failure;			/* owned; NULL when ok */
	char *diff;			/* owned; NULL unless the snapshot differed */
};

/* copy.c: from's directories and regular files into to; a link or a special file fails r. */
int scenario_copy_tree(struct scenario_run *r, const char *from, const char *to);

/* snapshot.c */
/* "mask" compiled into r->masks; -1 (r failed) when it is not a list of valid EREs. */
int scenario_mask_load(struct scenario_run *r);
void scenario_mask_free(struct scenario_run *r);
/* After a failed run: actual/ written and diffed against expected/, the failure told where. */
void scenario_snapshot_partial(struct scenario_run *r);

/* util.c */
int scenario_fail(struct scenario_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
long scenario_now_ms(void);
int scenario_spawn_wait(const char *const argv[]);
char *scenario_read_file(const char *path);	/* owned; NULL when unreadable */
int scenario_write_file(const char *path, const char *text);
int scenario_rmtree(const char *path);

/* play.c: plays the scenario in dir; fills res (its strings owned by res). */
void scenario_play(const struct scenario_opts *o, const char *dir, struct scenario_result *res);

/* proc.c: the agent process */
int scenario_proc_start(struct scenario_run *r);
int scenario_proc_read(struct scenario_run *r, int ms);	/* -1 at EOF */
int scenario_proc_write(struct scenario_run *r, const char *data, size_t len);
int scenario_proc_stop(struct scenario_run *r, int expect_exit, int sig);

/* steps.c */
int scenario_step_run(struct scenario_run *r, json_t *step);	/* step: borrowed */
char *scenario_subst(struct scenario_run *r, const char *s);	/* owned */

/* mcp.c: scripted MCP servers (mock-mcp) */
int scenario_mcp_load(struct scenario_run *r);
int scenario_mcp_check_refs(struct scenario_run *r, const json_t *v);
json_t *scenario_mcp_subst(const struct scenario_run *r, const char *s);	/* new reference or NULL */
int scenario_mcp_log_step(struct scenario_run *r, const json_t *spec);
int scenario_mcp_check_gone(struct scenario_run *r, int check);

/* mock.c: the mock OpenAI-compatible server */
int scenario_mock_start(struct scenario_run *r, const char *script);
void scenario_mock_stop(struct scenario_run *r);

/* pretty.c: make demo's readable conversation */
void scenario_pretty_client(struct scenario_run *r, const json_t *msg);
void scenario_pretty_agent(struct scenario_run *r, const char *line);
void scenario_pretty_flush(struct scenario_run *r);

/* snapshot.c: normalised outputs against expected/ */
int scenario_snapshot_check(struct scenario_run *r);

/* junit.c */
int scenario_junit_write(FILE *f, const struct scenario_result *res, size_t n);

#endif
