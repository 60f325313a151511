/* `acp-agent chat`: its own options; every other one is the agent's, passed to the child. */
#include "chat/chat.h"

#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/statedir.h"
#include "base/xmalloc.h"
#include "chat/client.h"
#include "chat/texts.h"

static int chat_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr, and the exit status of bad usage. */
static int
chat_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs(CHAT_E_PREFIX, stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

/* The agent's options that print instead of serving: not for a child we talk ACP to. */
static int
chat_not_for_child(const char *arg)
{
	static const char *const printing[] = { "--version", "--print-tools-markdown" };

	for (size_t i = 0; i < sizeof(printing) / sizeof(printing[0]); i++)
		if (strcmp(arg, printing[i]) == 0)
			return 1;
	return 0;
}

/* The agent's state directory as the agent will find it: --state-dir, else ACP_AGENT_STATE_DIR,
 * else the default (owned). */
static char *
chat_state_dir(char *const *argv)
{
	const char *env = getenv("ACP_AGENT_STATE_DIR"), *dir = NULL;

	for (size_t i = 1; argv[i]; i++) {
		/* as the agent's getopt_long reads it: --state-dir, or a prefix of it no other option has */
		const char *a = argv[i], *eq = strchr(a, '=');
		size_t n = eq ? (size_t)(eq - a) : strlen(a);
		if (n < 4 || strncmp(a, "--state-dir", n) != 0)
			continue;
		if (eq)
			dir = eq + 1;
		else if (argv[i + 1])
			dir = argv[++i];
	}
	if (dir && *dir)
		return xstrdup(dir);
	if (env && *env)
		return xstrdup(env);
	return statedir_default();
}

int
chat_main(int argc, char **argv)
{
	struct chat_opts o = { 0 };
	char **child = xcalloc((size_t)argc + 1, sizeof(*child)), *state;
	int n = 0, rc;

	child[n++] = argv[0];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(CHAT_USAGE, stdout);
			free(child);
			return 0;
		}
		if (strcmp(a, "--session") == 0) {
			if (i + 1 >= argc || argv[i + 1][0] == '\0') {
				free(child);
				return chat_usage_error("%s", CHAT_E_SESSION_ARG);
			}
			o.session = argv[++i];
		} else if (strncmp(a, "--session=", 10) == 0) {
			if (a[10] == '\0') {
				free(child);
				return chat_usage_error("%s", CHAT_E_SESSION_ARG);
			}
			o.session = a + 10;
		} else if (strcmp(a, "--list") == 0) {
			o.list = 1;
		} else if (chat_not_for_child(a)) {
			free(child);
			return chat_usage_error(CHAT_E_NOT_CHAT, a);
		} else {
			/* The agent judges its own options (and any stray argument: exit 2). */
			child[n++] = argv[i];
		}
	}
	child[n] = NULL;
	state = chat_state_dir(child);
	o.state_dir = state;
	/* The terminal's characters: what a person types (é, 日本) is read and measured as such. */
	if (setlocale(LC_CTYPE, "") == NULL || strcmp(nl_langinfo(CODESET), "UTF-8") != 0)
		setlocale(LC_CTYPE, "C.UTF-8");
	/* A closed pipe is an error to see, not a signal that kills; logs only when they matter. */
	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_ERROR);
	o.agent_argv = child;
	rc = chat_client_run(&o);
	free(child);
	free(state);
	return rc;
}
