/* acp-agent: options, fds, the loop. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/server.h"
#include "agent/agent_types.h"
#include "agent/defaults.h"
#include "record/record.h"
#include "base/guard.h"
#include "base/log.h"
#include "base/version.h"
#include "base/statedir.h"
#include "base/xmalloc.h"
#include "chat/chat.h"
#include "scenario/scenario.h"
#include "tools/toolsets.h"

#define MAIN_HEAP_KEEP (8 << 20)

/* --help prints the defaults (agent/defaults.h) as numbers. */
#define MAIN_STR(x) MAIN_STR_(x)
#define MAIN_STR_(x) #x

/* One setting and where it came from, so a bad value is blamed on what the user wrote. */
struct main_setting {
	const char *value;	/* NULL: not set */
	const char *from;	/* "--sync" or "ACP_AGENT_SYNC" */
	char sep;		/* ' ' after an option, '=' after a variable */
};

/* The signals that end the process in order (docs/contract.md §2): SIGINT and SIGTERM have the server's
 * watchers, SIGHUP (a terminal closing under an editor) and SIGQUIT get main's. */
static const int main_stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
static volatile sig_atomic_t main_early_signal;

static const char main_help_text[] =
    "usage: acp-agent [--state-dir DIR] [--model builtin|replay|openai] [--recording FILE]\n"
    "                 [--record DIR] [--profile default|team] [--sync none|turn|always] [--max-depth N]\n"
    "                 [--max-active N] [--max-steps N] [--log-level error|warn|info|debug]\n"
    "                 [--tools none|workspace] [--permission-mode MODE]\n"
    "                 [--child-approvals ask|never] [--deterministic] [--version] [-h|--help]\n"
    "       acp-agent chat [--session ID] [options]\n"
    "       acp-agent scenario run [--update] [--junit FILE] DIR...\n"
    "Speaks ACP v1 (JSON-RPC 2.0, one object per line) on stdin/stdout; logs go to stderr.\n"
    "An option wins over its variable; a variable set to \"\" counts as unset.\n"
    "\n"
    "option                 variable                  default\n"
    "--state-dir DIR        ACP_AGENT_STATE_DIR       $XDG_STATE_HOME/acp-agent, else\n"
    "                                                 $HOME/.local/state/acp-agent\n"
    "--model NAME           ACP_AGENT_MODEL_PROVIDER  openai if ACP_AGENT_API_KEY is set,\n"
    "                                                 else builtin; or replay\n"
    "--recording FILE       ACP_AGENT_RECORDING       none; --model replay needs one\n"
    "--record DIR           ACP_AGENT_RECORD          none; write the session as a keyless\n"
    "                                                 scenario into DIR (new or empty)\n"
    "--profile NAME         ACP_AGENT_PROFILE         default; or team\n"
    "--sync POLICY          ACP_AGENT_SYNC            turn; or none, always\n"
    "--tools SET                                      workspace (read, write, edit, glob, grep,\n"
    "                                                 bash, job_output, job_kill); or none\n"
    "--permission-mode MODE ACP_AGENT_PERMISSION_MODE default; or read-only, accept-edits,\n"
    "                                                 full-access (a new session's mode)\n"
    "--child-approvals WHEN                           ask (children ask through their root);\n"
    "                                                 or never (their asks are rejected)\n"
    "--max-depth N                                    "
    MAIN_STR(AGENT_DEFAULT_MAX_DEPTH) " (deepest delegation)\n"
    "--max-active N                                   "
    MAIN_STR(AGENT_DEFAULT_MAX_ACTIVE) " (resident children per root)\n"
    "--max-steps N                                    "
    MAIN_STR(AGENT_DEFAULT_MAX_STEPS) " (model requests per turn)\n"
    "--log-level LEVEL      ACP_AGENT_LOG             warn; or error, info, debug\n"
    "--deterministic        ACP_AGENT_DETERMINISTIC   off; 1 turns it on: counter ids and a\n"
    "                                                 stepping clock, for tests\n"
    "--print-tools-markdown                           off (print the profile's tools as\n"
    "                                                 Markdown, then exit)\n"
    "--version                                        print the version, then exit\n"
    "-h, --help                                       print this help, then exit\n";

/* The variables of --help (one string literal may hold only so much). */
static const char main_help_vars[] =
    "\n"
    "The openai model (an OpenAI-compatible chat completions server):\n"
    "variable                       default\n"
    "ACP_AGENT_API_KEY              none; required (sent as a bearer token, never logged)\n"
    "ACP_AGENT_BASE_URL             " AGENT_DEFAULT_BASE_URL "\n"
    "ACP_AGENT_MODEL                " AGENT_DEFAULT_MODEL "\n"
    "ACP_AGENT_MODELS               the one ACP_AGENT_MODEL (a comma list: the model choices)\n"
    "ACP_AGENT_CONNECT_TIMEOUT_MS   " MAIN_STR(AGENT_DEFAULT_CONNECT_MS) "\n"
    "ACP_AGENT_IDLE_TIMEOUT_MS      "
    MAIN_STR(AGENT_DEFAULT_IDLE_MS) " (no byte for that long fails the request)\n"
    "ACP_AGENT_RETRY_BASE_MS        "
    MAIN_STR(AGENT_DEFAULT_RETRY_MS) " (first retry delay after a 429 or 5xx)\n"
    "\n"
    "Long conversations (docs/contract.md §19):\n"
    "variable                       default\n"
    "ACP_AGENT_CONTEXT_WINDOW       " MAIN_STR(AGENT_DEFAULT_CONTEXT_WINDOW) " (the model's window, in tokens)\n"
    "ACP_AGENT_COMPACT_AT           0.8 (compact before a request estimated above this\n"
    "                               fraction of the window; /compact compacts now)\n"
    "\n"
    "MCP servers (the editor's mcpServers, docs/contract.md §18):\n"
    "variable                       default\n"
    "ACP_AGENT_MCP_STARTUP_MS       30000 (a server's handshake; a turn's first request waits)\n"
    "ACP_AGENT_MCP_TOOL_TIMEOUT_MS  60000 (one tools/call)\n"
    "A stdio server's command is looked up on PATH and runs in the workspace with our\n"
    "environment minus every ACP_AGENT_* variable, plus the env the editor gave it.\n"
    "\n"
    "Your own files (docs/contract.md §23, §25):\n"
    "XDG_CONFIG_HOME                $HOME/.config: your AGENTS.md, read by every agent, is\n"
    "                               XDG_CONFIG_HOME/acp-agent/AGENTS.md; your agent types are in\n"
    "                               XDG_CONFIG_HOME/acp-agent/agents/ and ~/.claude/agents/\n"
    "\n"
    "Tests only:\n"
    "ACP_AGENT_FAULTS               none (fault injection, e.g. log-sync-fail; see README)\n";

/* The rest of --help (one string literal may hold only so much). */
static const char main_help_subcommands[] =
    "\n"
    "Subcommands (the first argument; any other argument that is not an option exits 2):\n"
    "chat                   a terminal chat: runs the agent as a child with the options\n"
    "                       given; a line is a prompt (acp-agent chat --help)\n"
    "scenario run           replay scenario directories keyless and compare them with their\n"
    "                       expected/ (acp-agent scenario --help; docs/scenarios.md)\n"
    "agents [--cwd DIR]     the agent types a session in DIR (default: here) would see, one per\n"
    "                       line: name, file or built-in, description; then the files skipped\n";

static int main_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
main_usage(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "acp-agent: %s (see --help)\n", msg);
	return 2;
}

static int
main_int(const char *s, int min, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s == '\0' || *end || errno || v < min || v > 1000000)
		return -1;
	*out = (int)v;
	return 0;
}

static const char *
main_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* A setting from the environment; an option given later overrides it with main_set_opt. */
static struct main_setting
main_env_setting(const char *name)
{
	struct main_setting st = { main_env(name), name, '=' };

	return st;
}

static void
main_set_opt(struct main_setting *st, const char *opt, const char *value)
{
	st->value = value;
	st->from = opt;
	st->sep = ' ';
}

/* A millisecond setting from the environment, or def. A bad value is a usage error: returns 2. */
static int
main_env_ms(const char *name, long def, long *out)
{
	const char *v = main_env(name);
	char *end;

	*out = def;
	if (v == NULL)
		return 0;
	errno = 0;
	*out = strtol(v, &end, 10);
	if (*end || errno || *out <= 0)
		return main_usage("%s: \"%s\" is not a positive number of milliseconds", name, v);
	return 0;
}

/* ACP_AGENT_CONTEXT_WINDOW (tokens) and ACP_AGENT_COMPACT_AT (a fraction): 2 when bad. */
static int
main_env_context(struct acp_options *o)
{
	const char *w = main_env("ACP_AGENT_CONTEXT_WINDOW"), *f = main_env("ACP_AGENT_COMPACT_AT");
	char *end;

	o->context_window = AGENT_DEFAULT_CONTEXT_WINDOW;
	o->compact_at = AGENT_DEFAULT_COMPACT_AT;
	if (w) {
		errno = 0;
		o->context_window = strtoll(w, &end, 10);
		if (*end || errno || o->context_window < 1000 || o->context_window > 100000000)
			return main_usage("ACP_AGENT_CONTEXT_WINDOW: \"%s\" is not a number of tokens from 1000 "
			    "to 100000000", w);
	}
	if (f) {
		errno = 0;
		o->compact_at = strtod(f, &end);
		if (*end || errno || !(o->compact_at > 0.0 && o->compact_at <= 1.0))
			return main_usage("ACP_AGENT_COMPACT_AT: \"%s\" is not a fraction above 0 and at most 1",
			    f);
	}
	return 0;
}

static void
main_note_signal(int sig)
{
	main_early_signal = sig;
}

/*
 * Runs before any start-up work: until the loop's watchers exist, a stop signal is only noted,
 * and the server shuts down in order as soon as it is up. A signal ignored on entry (nohup, a
 * background job of sh) stays ignored; *ignored gets those.
 */
static void
main_catch_early(sigset_t *ignored)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = main_note_signal;
	sa.sa_flags = SA_RESTART;	/* start-up's reads and opens go on */
	sigemptyset(&sa.sa_mask);
	sigemptyset(ignored);
	for (size_t i = 0; i < sizeof(main_stop_signals) / sizeof(main_stop_signals[0]); i++) {
		if (sigaction(main_stop_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			sigaddset(ignored, main_stop_signals[i]);
		else
			sigaction(main_stop_signals[i], &sa, NULL);
	}
}

static void
main_block_stop_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(main_stop_signals) / sizeof(main_stop_signals[0]); i++)
		sigaddset(&set, main_stop_signals[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
}

/* SIGHUP and SIGQUIT once the loop runs: what the server does for SIGINT and SIGTERM. */
static void
main_on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	log_info("acp: signal %d: shutting down", w->signum);
	acp_server_shutdown(w->data);
}

/* What the command line and the environment say, before it is checked. */
struct main_args {
	struct main_setting state, model, rec, prof, sync, loglevel, tools, perm, child, record;
	int tools_md;
};

/* Reads the options over the environment into a and o; -1 to go on, else the exit code. */
static int
main_parse(int argc, char **argv, struct main_args *a, struct acp_options *o)
{
	enum { OPT_STATE = 256, OPT_MODEL, OPT_REC, OPT_PROFILE, OPT_SYNC, OPT_DEPTH, OPT_ACTIVE, OPT_STEPS, OPT_LOG,
		OPT_DET, OPT_VERSION, OPT_HELP, OPT_TOOLS_MD, OPT_TOOLS, OPT_PERM, OPT_CHILD, OPT_RECORD };
	static const struct option longopts[] = {
		{ "state-dir", required_argument, NULL, OPT_STATE },
		{ "model", required_argument, NULL, OPT_MODEL },
		{ "recording", required_argument, NULL, OPT_REC },
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "sync", required_argument, NULL, OPT_SYNC },
		{ "max-depth", required_argument, NULL, OPT_DEPTH },
		{ "max-active", required_argument, NULL, OPT_ACTIVE },
		{ "max-steps", required_argument, NULL, OPT_STEPS },
		{ "log-level", required_argument, NULL, OPT_LOG },
		{ "deterministic", no_argument, NULL, OPT_DET },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "print-tools-markdown", no_argument, NULL, OPT_TOOLS_MD },
		{ "tools", required_argument, NULL, OPT_TOOLS },
		{ "permission-mode", required_argument, NULL, OPT_PERM },
		{ "child-approvals", required_argument, NULL, OPT_CHILD },
		{ "record", required_argument, NULL, OPT_RECORD },
		{ NULL, 0, NULL, 0 },
	};
	const char *det = main_env("ACP_AGENT_DETERMINISTIC");
	int c;

	a->state = main_env_setting("ACP_AGENT_STATE_DIR");
	a->model = main_env_setting("ACP_AGENT_MODEL_PROVIDER");
	a->rec = main_env_setting("ACP_AGENT_RECORDING");
	a->prof = main_env_setting("ACP_AGENT_PROFILE");
	a->perm = main_env_setting("ACP_AGENT_PERMISSION_MODE");
	a->sync = main_env_setting("ACP_AGENT_SYNC");
	a->loglevel = main_env_setting("ACP_AGENT_LOG");
	a->record = main_env_setting("ACP_AGENT_RECORD");
	o->max_depth = AGENT_DEFAULT_MAX_DEPTH;
	o->max_active = AGENT_DEFAULT_MAX_ACTIVE;
	o->max_steps = AGENT_DEFAULT_MAX_STEPS;
	o->deterministic = det != NULL && strcmp(det, "1") == 0;
	o->faults = main_env("ACP_AGENT_FAULTS");
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE: main_set_opt(&a->state, "--state-dir", optarg); break;
		case OPT_MODEL: main_set_opt(&a->model, "--model", optarg); break;
		case OPT_REC: main_set_opt(&a->rec, "--recording", optarg); break;
		case OPT_PROFILE: main_set_opt(&a->prof, "--profile", optarg); break;
		case OPT_SYNC: main_set_opt(&a->sync, "--sync", optarg); break;
		case OPT_DEPTH:
			if (main_int(optarg, 0, &o->max_depth) < 0)
				return main_usage("--max-depth: \"%s\" is not a non-negative integer", optarg);
			break;
		case OPT_ACTIVE:
			if (main_int(optarg, 1, &o->max_active) < 0)
				return main_usage("--max-active: \"%s\" is not a positive integer", optarg);
			break;
		case OPT_STEPS:
			if (main_int(optarg, 1, &o->max_steps) < 0)
				return main_usage("--max-steps: \"%s\" is not a positive integer", optarg);
			break;
		case OPT_LOG: main_set_opt(&a->loglevel, "--log-level", optarg); break;
		case OPT_DET: o->deterministic = 1; break;
		case OPT_VERSION:
			printf("acp-agent %s\n", ACP_AGENT_VERSION);
			return 0;
		case 'h':
		case OPT_HELP:
			fputs(main_help_text, stdout);
			fputs(main_help_vars, stdout);
			fputs(main_help_subcommands, stdout);
			return 0;
		case OPT_TOOLS_MD: a->tools_md = 1; break;
		case OPT_TOOLS: main_set_opt(&a->tools, "--tools", optarg); break;
		case OPT_PERM: main_set_opt(&a->perm, "--permission-mode", optarg); break;
		case OPT_CHILD: main_set_opt(&a->child, "--child-approvals", optarg); break;
		case OPT_RECORD: main_set_opt(&a->record, "--record", optarg); break;
		default:
			return main_usage("unknown or incomplete option \"%s\"", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return main_usage("unexpected argument \"%s\"", argv[optind]);
	return -1;
}

/* Prints the profile's tools as markdown (make docs). */
static int
main_tools_markdown(const struct toolset_profile *profile)
{
	struct toolbox tb;
	char *md;

	toolbox_init(&tb);
	toolsets_build(&tb, profile);
	md = toolsets_markdown(&tb, profile->name);
	fputs(md, stdout);
	free(md);
	toolbox_free(&tb);
	return 0;
}

/* Checks what a says and completes o; -1 to go on, else the exit code. *state_default: owned. */
static int
main_settle(const struct main_args *a, struct acp_options *o, char **state_default)
{
	enum log_level level;
	const struct toolset_profile *profile;
	int rc;

	if (a->loglevel.value && log_parse_level(a->loglevel.value, &level) < 0)
		return main_usage("%s: \"%s\" is not error, warn, info or debug", a->loglevel.from,
		    a->loglevel.value);
	if (a->loglevel.value)
		log_set_level(level);
	o->sync = SESS_SYNC_TURN;
	if (a->sync.value && sess_sync_parse(a->sync.value, &o->sync) < 0)
		return main_usage("%s: \"%s\" is not none, turn or always", a->sync.from, a->sync.value);
	o->profile = a->prof.value ? a->prof.value : "default";
	o->workspace = 1;
	if (a->tools.value && strcmp(a->tools.value, "none") == 0)
		o->workspace = 0;
	else if (a->tools.value && strcmp(a->tools.value, "workspace") != 0)
		return main_usage("%s: \"%s\" is not none or workspace", a->tools.from, a->tools.value);
	o->start_mode = PERMIT_DEFAULT;
	if (a->perm.value && permit_mode_parse(a->perm.value, &o->start_mode) < 0)
		return main_usage("%s: \"%s\" is not read-only, default, accept-edits or full-access", a->perm.from,
		    a->perm.value);
	if (a->child.value && strcmp(a->child.value, "never") == 0)
		o->child_approvals_never = 1;
	else if (a->child.value && strcmp(a->child.value, "ask") != 0)
		return main_usage("%s: \"%s\" is not ask or never", a->child.from, a->child.value);
	if ((profile = toolsets_profile(o->profile, o->workspace)) == NULL)
		return main_usage("%s: \"%s\" is not default or team", a->prof.from, o->profile);
	if (a->tools_md)
		return main_tools_markdown(profile);
	o->model = a->model.value ? a->model.value : main_env("ACP_AGENT_API_KEY") ? "openai" : "builtin";
	o->recording = a->rec.value;
	if (strcmp(o->model, "builtin") != 0 && strcmp(o->model, "replay") != 0 &&
	    strcmp(o->model, "openai") != 0)
		return main_usage("%s: \"%s\" is not builtin, replay or openai", a->model.from, o->model);
	if (strcmp(o->model, "replay") == 0 && o->recording == NULL)
		return main_usage("%s%creplay needs --recording FILE (or ACP_AGENT_RECORDING)",
		    a->model.from, a->model.sep);
	if (strcmp(o->model, "replay") != 0 && o->recording != NULL)
		log_warn("%s is ignored: the model is %s, and only --model replay reads a recording",
		    a->rec.from, o->model);
	o->openai.base_url = main_env("ACP_AGENT_BASE_URL");
	if (o->openai.base_url == NULL)
		o->openai.base_url = AGENT_DEFAULT_BASE_URL;
	o->openai.api_key = main_env("ACP_AGENT_API_KEY");
	o->models = main_env("ACP_AGENT_MODELS");
	o->openai.model = main_env("ACP_AGENT_MODEL");
	if (o->openai.model == NULL)
		o->openai.model = AGENT_DEFAULT_MODEL;
	o->openai.max_tries = 3;
	if ((rc = main_env_ms("ACP_AGENT_CONNECT_TIMEOUT_MS", AGENT_DEFAULT_CONNECT_MS,
	    &o->openai.connect_timeout_ms)) ||
	    (rc = main_env_ms("ACP_AGENT_IDLE_TIMEOUT_MS", AGENT_DEFAULT_IDLE_MS, &o->openai.idle_timeout_ms)) ||
	    (rc = main_env_ms("ACP_AGENT_RETRY_BASE_MS", AGENT_DEFAULT_RETRY_MS, &o->openai.backoff_ms)) ||
	    (rc = main_env_context(o)))
		return rc;
	if (strcmp(o->model, "openai") == 0 && o->openai.api_key == NULL)
		return main_usage("%s%copenai needs ACP_AGENT_API_KEY", a->model.from, a->model.sep);
	o->state_dir = a->state.value ? a->state.value : (*state_default = statedir_default());
	if (a->record.value) {
		struct err e;
		err_clear(&e);
		if (record_check_dir(a->record.value, &e) < 0)
			return main_usage("%s%c%s", a->record.from, a->record.sep, e.msg);
		o->record_dir = a->record.value;
	}
	return -1;
}

static void
main_record_arg(json_t *args, const char *opt, const char *value)
{
	json_array_append_new(args, json_string(opt));
	json_array_append_new(args, json_string(value));
}

/* Adds "NAME": value to env when the variable is set (the replay needs it to behave alike). */
static void
main_record_env(json_t *env, const char *name)
{
	const char *v = main_env(name);

	if (v)
		json_object_set_new(env, name, json_string(v));
}

/*
 * What a replay of a --record session runs with (docs/contract.md §21): the options that shape the session,
 * not the provider's (the runner gives --model replay --recording --deterministic and a state
 * directory), nor the key or the server. args, env: owned, new.
 */
static void
main_record_setup(const struct acp_options *o, json_t **args, json_t **env)
{
	static const char *const vars[] = { "ACP_AGENT_CONTEXT_WINDOW", "ACP_AGENT_COMPACT_AT",
		"ACP_AGENT_MODELS", "ACP_AGENT_MCP_STARTUP_MS", "ACP_AGENT_MCP_TOOL_TIMEOUT_MS" };
	char n[32];

	*args = json_array();
	*env = json_object();
	if (strcmp(o->profile, "default") != 0)
		main_record_arg(*args, "--profile", o->profile);
	if (!o->workspace)
		main_record_arg(*args, "--tools", "none");
	if (o->start_mode != PERMIT_DEFAULT)
		main_record_arg(*args, "--permission-mode", permit_mode_id(o->start_mode));
	if (o->child_approvals_never)
		main_record_arg(*args, "--child-approvals", "never");
	if (o->sync != SESS_SYNC_TURN)
		main_record_arg(*args, "--sync", o->sync == SESS_SYNC_NONE ? "none" : "always");
	if (o->max_depth != AGENT_DEFAULT_MAX_DEPTH) {
		snprintf(n, sizeof(n), "%d", o->max_depth);
		main_record_arg(*args, "--max-depth", n);
	}
	if (o->max_active != AGENT_DEFAULT_MAX_ACTIVE) {
		snprintf(n, sizeof(n), "%d", o->max_active);
		main_record_arg(*args, "--max-active", n);
	}
	if (o->max_steps != AGENT_DEFAULT_MAX_STEPS) {
		snprintf(n, sizeof(n), "%d", o->max_steps);
		main_record_arg(*args, "--max-steps", n);
	}
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		main_record_env(*env, vars[i]);
}

/* Serves ACP on stdin/stdout until EOF or a stop signal; returns the exit code. */
static int
main_serve(const struct acp_options *o, const sigset_t *ignored)
{
	int rc = 0;

	/* The protocol gets its own fd; fd 1 becomes stderr so a stray print cannot corrupt it. */
	signal(SIGPIPE, SIG_IGN);
	int proto = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (proto < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		fprintf(stderr, "acp-agent: cannot set up stdout: %s\n", strerror(errno));
		return 1;
	}
	int in_flags = fcntl(STDIN_FILENO, F_GETFL);
	int out_flags = fcntl(proto, F_GETFL);
	if (in_flags >= 0)
		fcntl(STDIN_FILENO, F_SETFL, in_flags | O_NONBLOCK);
	if (out_flags >= 0)
		fcntl(proto, F_SETFL, out_flags | O_NONBLOCK);

	/* Not the default loop: libev's default reaps every child in its SIGCHLD handler, and the
	 * bash runner waits for its own (workspace/proc.c). */
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct acp_server *srv = xcalloc(1, sizeof(*srv));
	struct err e;
	err_clear(&e);
	ev_signal sighup, sigquit;
	ev_signal_init(&sighup, main_on_signal, SIGHUP);
	ev_signal_init(&sigquit, main_on_signal, SIGQUIT);
	sighup.data = sigquit.data = srv;
	/* Before anything is spawned: what we start dies with us, even by SIGKILL (base/guard.h). */
	if (guard_start(&e) < 0) {
		log_warn("%s; a SIGKILL of the agent may leave its commands' children behind", e.msg);
		err_clear(&e);
	}
	if (acp_server_init(srv, loop, STDIN_FILENO, proto, o, &e) < 0) {
		fprintf(stderr, "acp-agent: %s\n", e.msg);
		rc = e.code == ERR_SESSION_LOG_IO ? 1 : 2;
	} else {
		/* An ignored SIGHUP (nohup) stays ignored; neither watcher keeps the loop alive. */
		if (!sigismember(ignored, SIGHUP)) {
			ev_signal_start(loop, &sighup);
			ev_unref(loop);
		}
		if (!sigismember(ignored, SIGQUIT)) {
			ev_signal_start(loop, &sigquit);
			ev_unref(loop);
		}
		/* Every watcher is up: a signal noted before now is served as if it came now. */
		if (main_early_signal) {
			log_info("acp: signal %d during start-up: shutting down",
			    (int)main_early_signal);
			acp_server_shutdown(srv);
		}
		ev_run(loop, 0);
		/* From here on a repeated stop signal (a launcher that signals the whole group, a
		 * second Ctrl-C) must not cut the shutdown short: stopping the watchers below gives
		 * the signals back their default action, so they are blocked first. */
		main_block_stop_signals();
		acp_server_shutdown(srv);
		runq_drain(&srv->runq);
		wq_flush_blocking(&srv->wq, 2000);
	}
	if (ev_is_active(&sighup)) {
		ev_ref(loop);
		ev_signal_stop(loop, &sighup);
	}
	if (ev_is_active(&sigquit)) {
		ev_ref(loop);
		ev_signal_stop(loop, &sigquit);
	}
	acp_server_free(srv);
	free(srv);
	if (in_flags >= 0)
		fcntl(STDIN_FILENO, F_SETFL, in_flags);
	if (out_flags >= 0)
		fcntl(proto, F_SETFL, out_flags);
	close(proto);
	ev_loop_destroy(loop);
	return rc;
}

/* s on stdout with its control characters (C0, DEL, C1) shown as escapes: a file's name and what
 * it says are anybody's, and a terminal must not take them for commands. */
static void
main_put_text(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			printf("\\x%02x", *p);
		} else if (p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) {
			printf("\\u00%02x", p[1]);
			p++;
		} else {
			putchar(*p);
		}
	}
}

/* `acp-agent agents [--cwd DIR]` (docs/contract.md §23.1): the types a session in DIR would see. */
static int
main_agents(int argc, char **argv)
{
	const char *dir = ".";
	char *real, **known;
	struct agent_types t;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--cwd") == 0 && i + 1 < argc) {
			dir = argv[++i];
		} else if (strncmp(argv[i], "--cwd=", 6) == 0) {
			dir = argv[i] + 6;
		} else if (strcmp(argv[i], "--help") == 0) {
			fputs("usage: acp-agent agents [--cwd DIR]\n", stdout);
			return 0;
		} else {
			fprintf(stderr, "acp-agent agents: unexpected argument \"%s\"; usage: acp-agent agents [--cwd DIR]\n",
			    argv[i]);
			return 2;
		}
	}
	if ((real = realpath(dir, NULL)) == NULL) {
		fprintf(stderr, "acp-agent agents: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	known = toolsets_names();
	agent_types_load(&t, real, getenv("HOME"), getenv("XDG_CONFIG_HOME"), (const char *const *)known, NULL);
	for (size_t i = 0; i < t.n; i++) {
		main_put_text(t.v[i].name);
		putchar('\t');
		main_put_text(t.v[i].path ? t.v[i].path : "built-in");
		putchar('\t');
		main_put_text(t.v[i].description);
		putchar('\n');
	}
	size_t i;
	json_t *s;
	json_array_foreach(t.skipped, i, s) {
		fputs("skipped ", stdout);
		main_put_text(json_string_value(json_object_get(s, "path")));
		fputs(": ", stdout);
		main_put_text(json_string_value(json_object_get(s, "reason")));
		putchar('\n');
	}
	agent_types_free(&t);
	toolsets_names_free(known);
	free(real);
	return fflush(stdout) == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	struct acp_options o = { 0 };
	struct main_args a = { 0 };
	char *state_default = NULL;
	sigset_t ignored;
	int rc;

	/* Subcommands (docs/contract.md §20.1) before anything a server sets up. */
	if (argc > 1 && strcmp(argv[1], "scenario") == 0)
		return scenario_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "chat") == 0)
		return chat_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], "agents") == 0)
		return main_agents(argc, argv);
	main_catch_early(&ignored);
	/* Orphans of the commands we run (a `sleep &` whose shell ended) become our children, so the
	 * bash runner reaps them when it kills their group (workspace/proc.h), whatever init does. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* Answers and their log lines are megabytes at times: keep such blocks in the heap and reuse
	 * them, instead of an mmap, a page fault per 4 KiB and an munmap for every one. At most
	 * MAIN_HEAP_KEEP bytes of freed memory stay with the process. */
	mallopt(M_MMAP_THRESHOLD, MAIN_HEAP_KEEP);
	mallopt(M_TRIM_THRESHOLD, MAIN_HEAP_KEEP);
	if ((rc = main_parse(argc, argv, &a, &o)) >= 0 || (rc = main_settle(&a, &o, &state_default)) >= 0) {
		free(state_default);
		return rc;
	}
	if (o.record_dir)
		main_record_setup(&o, &o.record_args, &o.record_env);
	rc = main_serve(&o, &ignored);
	json_decref(o.record_args);
	json_decref(o.record_env);
	free(state_default);
	return rc;
}
