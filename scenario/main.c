/*
 * `acp-agent scenario run [--update] [--junit FILE] DIR...` (docs/contract.md §21): replays each scenario
 * directory keyless against an acp-agent (this very binary unless --agent), compares it with
 * its expected/, and ends with "N passed, N failed". The developer options drive the
 * project's own tests: the mock servers, traces for the schema check, make demo's --pretty.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "scenario/internal.h"
#include "scenario/scenario.h"

static const char scenario_main_help_text[] =
    "usage: acp-agent scenario run [--update] [--junit FILE] DIR...\n"
    "Replays each scenario directory keyless (--model replay --deterministic, a fresh state\n"
    "directory, its workspace/ copied to a fresh cwd), compares the normalised output with its\n"
    "expected/, prints a unified diff per mismatch and ends with \"N passed, N failed\".\n"
    "Exit status: 0 when every scenario passed, 1 when one failed, 2 on bad usage.\n"
    "The format: docs/scenarios.md.\n"
    "\n"
    "--update               write expected/ from this run (creating it for a new scenario)\n"
    "--junit FILE           also write the results as JUnit XML to FILE\n"
    "-h, --help             print this help, then exit\n"
    "\n"
    "Developer options (the project's own tests):\n"
    "--agent PATH           the acp-agent to play against (default: this program)\n"
    "--mock PATH            mock-openai, for scenarios with \"mock\" (default: beside this\n"
    "                       program)\n"
    "--mock-mcp PATH        mock-mcp, for scenarios with \"mcp\" (default: beside this program)\n"
    "--traces DIR           write each scenario's wire trace to DIR/<name>.trace\n"
    "--pretty               print the conversation as it plays, compare nothing (make demo)\n"
    "variable               default\n"
    "SCENARIO_TMPDIR        $TMPDIR, else /tmp (where each scenario's temp dir goes; a failed\n"
    "                       scenario's is kept)\n"
    "SCENARIO_NO_RSS_LIMIT  unset (set: burst steps skip their memory limit)\n"
    "VALGRIND               unset (1: run the agent under valgrind)\n";

static int scenario_main_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
scenario_main_usage(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "acp-agent scenario: %s (see acp-agent scenario --help)\n", msg);
	return 2;
}

/* name beside this program, absolute, into out. */
static void
scenario_main_beside(const char *self, const char *name, char *out, size_t size)
{
	const char *slash = strrchr(self, '/');

	snprintf(out, size, "%.*s/%s", slash ? (int)(slash - self) : 1, slash ? self : ".", name);
}

/* path made absolute when it exists; else as given (its scenarios then fail naming it). */
static const char *
scenario_main_abs(const char *path, char *out)
{
	return realpath(path, out) ? out : path;
}

/* Plays dirs[0..n) with o; prints the summary, writes junit when given; the exit code. */
static int
scenario_main_run(const struct scenario_opts *o, char **dirs, int n, FILE *junit, const char *junit_path)
{
	struct scenario_result *res = xcalloc((size_t)n, sizeof(*res));
	int passed = 0, failed = 0, rc;

	for (int i = 0; i < n; i++) {
		scenario_play(o, dirs[i], &res[i]);
		if (res[i].ok) {
			passed++;
			if (!o->pretty)
				fputc('.', stderr);
		} else {
			failed++;
		}
	}
	if (!o->pretty)
		fputc('\n', stderr);
	fflush(stdout);
	printf("%d passed, %d failed\n", passed, failed);
	rc = failed ? 1 : 0;
	if (junit) {
		int wrc = scenario_junit_write(junit, res, (size_t)n);
		if (fclose(junit) != 0 || wrc < 0) {
			fprintf(stderr, "acp-agent scenario: --junit %s: %s\n", junit_path, strerror(errno));
			rc = 1;
		}
	}
	for (int i = 0; i < n; i++) {
		free(res[i].name);
		free(res[i].classname);
		free(res[i].failure);
		free(res[i].diff);
	}
	free(res);
	return rc;
}

/* `scenario run ...`: argv[0] is "run". */
static int
scenario_main_cmd_run(int argc, char **argv)
{
	enum { OPT_UPDATE = 256, OPT_JUNIT, OPT_AGENT, OPT_MOCK, OPT_MCP, OPT_TRACES, OPT_PRETTY, OPT_HELP };
	static const struct option longopts[] = {
		{ "update", no_argument, NULL, OPT_UPDATE },
		{ "junit", required_argument, NULL, OPT_JUNIT },
		{ "agent", required_argument, NULL, OPT_AGENT },
		{ "mock", required_argument, NULL, OPT_MOCK },
		{ "mock-mcp", required_argument, NULL, OPT_MCP },
		{ "traces", required_argument, NULL, OPT_TRACES },
		{ "pretty", no_argument, NULL, OPT_PRETTY },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct scenario_opts o = { 0 };
	char self[PATH_MAX], agent[PATH_MAX], mock[PATH_MAX], mcp[PATH_MAX];
	const char *agent_arg = NULL, *mock_arg = NULL, *mcp_arg = NULL, *junit_path = NULL;
	ssize_t len;
	FILE *junit = NULL;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_UPDATE: o.update = 1; break;
		case OPT_JUNIT: junit_path = optarg; break;
		case OPT_AGENT: agent_arg = optarg; break;
		case OPT_MOCK: mock_arg = optarg; break;
		case OPT_MCP: mcp_arg = optarg; break;
		case OPT_TRACES: o.traces = optarg; break;
		case OPT_PRETTY: o.pretty = 1; break;
		case 'h':
		case OPT_HELP:
			fputs(scenario_main_help_text, stdout);
			return 0;
		default:
			return scenario_main_usage("unknown or incomplete option \"%s\"", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return scenario_main_usage("run needs at least one scenario directory");
	if ((len = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0)
		return scenario_main_usage("cannot find this program: /proc/self/exe: %s", strerror(errno));
	self[len] = '\0';
	if (agent_arg && realpath(agent_arg, agent) == NULL)
		return scenario_main_usage("--agent %s: %s", agent_arg, strerror(errno));
	o.agent = agent_arg ? agent : self;
	if (mock_arg == NULL)
		scenario_main_beside(self, "mock-openai", mock, sizeof(mock));
	o.mock = mock_arg ? scenario_main_abs(mock_arg, mock) : mock;
	if (mcp_arg == NULL)
		scenario_main_beside(self, "mock-mcp", mcp, sizeof(mcp));
	o.mcp_mock = mcp_arg ? scenario_main_abs(mcp_arg, mcp) : mcp;
	if (junit_path && (junit = fopen(junit_path, "we")) == NULL)
		return scenario_main_usage("--junit %s: %s", junit_path, strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	return scenario_main_run(&o, argv + optind, argc - optind, junit, junit_path);
}

int
scenario_main(int argc, char **argv)
{
	if (argc < 2)
		return scenario_main_usage("missing subcommand (the subcommand is run)");
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		fputs(scenario_main_help_text, stdout);
		return 0;
	}
	if (strcmp(argv[1], "run") == 0)
		return scenario_main_cmd_run(argc - 1, argv + 1);
	return scenario_main_usage("unknown subcommand \"%s\" (the subcommand is run)", argv[1]);
}
