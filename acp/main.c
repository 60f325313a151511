/* acp-agent: options, fds, the loop. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/server.h"
#include "base/log.h"
#include "base/version.h"
#include "base/xmalloc.h"
#include "tools/toolsets.h"

#define MAIN_HEAP_KEEP (8 << 20)


static const char usage_text[] =
    "usage: acp-agent [--state-dir DIR] [--model builtin|replay|openai] [--recording FILE]\n"
    "                 [--profile default|team] [--sync none|turn|always] [--max-depth N]\n"
    "                 [--max-active N] [--max-steps N] [--log-level error|warn|info|debug]\n"
    "                 [--deterministic] [--version] [--help]\n"
    "Speaks ACP v1 (JSON-RPC 2.0, one object per line) on stdin/stdout.\n";

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

static char *
main_default_state_dir(void)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	if (xdg && xdg[0] == '/')
		return xasprintf("%s/acp-agent", xdg);
	return xasprintf("%s/.local/state/acp-agent", home && *home ? home : "/tmp");
}

static const char *
main_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* A millisecond setting from the environment, or def. */
static int
main_env_ms(const char *name, long def, long *out)
{
	const char *v = main_env(name);
	char *end;

	*out = def;
	if (v == NULL)
		return 0;
	*out = strtol(v, &end, 10);
	return (*end || *out <= 0) ? -1 : 0;
}

int
main(int argc, char **argv)
{
	enum { OPT_STATE = 256, OPT_MODEL, OPT_REC, OPT_PROFILE, OPT_SYNC, OPT_DEPTH, OPT_ACTIVE, OPT_STEPS, OPT_LOG,
		OPT_DET, OPT_VERSION, OPT_HELP, OPT_TOOLS_MD };
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
		{ NULL, 0, NULL, 0 },
	};
	struct acp_options o = { 0 };
	const char *sync = main_env("ACP_AGENT_SYNC"), *loglevel = main_env("ACP_AGENT_LOG");
	char *state_default = NULL;
	enum log_level level;
	enum toolset_profile profile;
	int c, tools_md = 0, rc = 0;

	/* Answers and their log lines are megabytes at times: keep such blocks in the heap and reuse
	 * them, instead of an mmap, a page fault per 4 KiB and an munmap for every one. At most
	 * MAIN_HEAP_KEEP bytes of freed memory stay with the process. */
	mallopt(M_MMAP_THRESHOLD, MAIN_HEAP_KEEP);
	mallopt(M_TRIM_THRESHOLD, MAIN_HEAP_KEEP);

	o.state_dir = main_env("ACP_AGENT_STATE_DIR");
	o.model = main_env("ACP_AGENT_MODEL_PROVIDER");
	o.recording = main_env("ACP_AGENT_RECORDING");
	o.profile = main_env("ACP_AGENT_PROFILE") ? main_env("ACP_AGENT_PROFILE") : "default";
	o.max_depth = 3;
	o.max_active = 8;
	o.max_steps = 50;
	const char *det = main_env("ACP_AGENT_DETERMINISTIC");
	o.deterministic = det != NULL && strcmp(det, "1") == 0;
	o.faults = main_env("ACP_AGENT_FAULTS");
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE: o.state_dir = optarg; break;
		case OPT_MODEL: o.model = optarg; break;
		case OPT_REC: o.recording = optarg; break;
		case OPT_PROFILE: o.profile = optarg; break;
		case OPT_SYNC: sync = optarg; break;
		case OPT_DEPTH:
			if (main_int(optarg, 0, &o.max_depth) < 0)
				return main_usage("--max-depth: \"%s\" is not a non-negative integer", optarg);
			break;
		case OPT_ACTIVE:
			if (main_int(optarg, 1, &o.max_active) < 0)
				return main_usage("--max-active: \"%s\" is not a positive integer", optarg);
			break;
		case OPT_STEPS:
			if (main_int(optarg, 1, &o.max_steps) < 0)
				return main_usage("--max-steps: \"%s\" is not a positive integer", optarg);
			break;
		case OPT_LOG: loglevel = optarg; break;
		case OPT_DET: o.deterministic = 1; break;
		case OPT_VERSION:
			printf("acp-agent %s\n", ACP_AGENT_VERSION);
			return 0;
		case OPT_HELP:
			fputs(usage_text, stdout);
			return 0;
		case OPT_TOOLS_MD: tools_md = 1; break;
		default:
			return main_usage("unknown or incomplete option \"%s\"", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return main_usage("unexpected argument \"%s\"", argv[optind]);
	if (loglevel && log_parse_level(loglevel, &level) < 0)
		return main_usage("--log-level: \"%s\" is not error, warn, info or debug", loglevel);
	if (loglevel)
		log_set_level(level);
	o.sync = SESS_SYNC_TURN;
	if (sync && sess_sync_parse(sync, &o.sync) < 0)
		return main_usage("--sync: \"%s\" is not none, turn or always", sync);
	if (toolsets_parse_profile(o.profile, &profile) < 0)
		return main_usage("--profile: \"%s\" is not default or team", o.profile);
	if (tools_md) {
		struct toolbox tb;
		toolbox_init(&tb);
		toolsets_build(&tb, profile);
		char *md = toolsets_markdown(&tb, o.profile);
		fputs(md, stdout);
		free(md);
		toolbox_free(&tb);
		return 0;
	}
	if (o.model == NULL)
		o.model = main_env("ACP_AGENT_API_KEY") ? "openai" : "builtin";
	if (strcmp(o.model, "builtin") != 0 && strcmp(o.model, "replay") != 0 &&
	    strcmp(o.model, "openai") != 0)
		return main_usage("--model: \"%s\" is not builtin, replay or openai", o.model);
	if (strcmp(o.model, "replay") == 0 && o.recording == NULL)
		return main_usage("%s", "--model replay needs --recording FILE");
	if (o.state_dir == NULL)
		o.state_dir = state_default = main_default_state_dir();
	o.openai.base_url = main_env("ACP_AGENT_BASE_URL") ? main_env("ACP_AGENT_BASE_URL") : "https://api.deepseek.com";
	o.openai.api_key = main_env("ACP_AGENT_API_KEY");
	o.openai.model = main_env("ACP_AGENT_MODEL") ? main_env("ACP_AGENT_MODEL") : "deepseek-chat";
	o.openai.max_tries = 3;
	if (main_env_ms("ACP_AGENT_CONNECT_TIMEOUT_MS", 10000, &o.openai.connect_timeout_ms) < 0 ||
	    main_env_ms("ACP_AGENT_IDLE_TIMEOUT_MS", 120000, &o.openai.idle_timeout_ms) < 0 ||
	    main_env_ms("ACP_AGENT_RETRY_BASE_MS", 500, &o.openai.backoff_ms) < 0)
		return main_usage("%s", "ACP_AGENT_*_MS must be a positive number of milliseconds");
	if (strcmp(o.model, "openai") == 0 && o.openai.api_key == NULL)
		return main_usage("%s", "--model openai needs ACP_AGENT_API_KEY");

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

	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	struct acp_server *srv = xcalloc(1, sizeof(*srv));
	struct err e;
	err_clear(&e);
	if (acp_server_init(srv, loop, STDIN_FILENO, proto, &o, &e) < 0) {
		fprintf(stderr, "acp-agent: %s\n", e.msg);
		rc = strcmp(e.code ? e.code : "", "session_log_io") == 0 ? 1 : 2;
	} else {
		ev_run(loop, 0);
		acp_server_shutdown(srv);
		runq_drain(&srv->runq);
		acp_wq_flush_blocking(&srv->wq, 2000);
	}
	acp_server_free(srv);
	free(srv);
	if (in_flags >= 0)
		fcntl(STDIN_FILENO, F_SETFL, in_flags);
	if (out_flags >= 0)
		fcntl(proto, F_SETFL, out_flags);
	close(proto);
	free(state_default);
	ev_loop_destroy(loop);
	return rc;
}
