/*
 * The logger writes to fd 2 directly (never through stdio buffers shared with
 * the protocol) and escapes control characters, so one event is one line.
 * Its level and its sink are the process-wide state besides the loop: both are
 * set before the loop starts (the sink only by tests, to capture what they
 * provoke) and only read afterwards.
 */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static enum log_level log_level = LOG_WARN;
static log_sink_fn *log_sink;
static void *log_sink_arg;

void
log_set_level(enum log_level level)
{
	log_level = level;
}

void
log_set_sink(log_sink_fn *fn, void *arg)
{
	log_sink = fn;
	log_sink_arg = arg;
}

int
log_parse_level(const char *s, enum log_level *out)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };

	for (int i = 0; i < 4; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

int
log_enabled(enum log_level level)
{
	return level <= log_level;
}

void
log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const tags[] = { "error", "warn", "info", "debug" };
	char raw[1024], line[2200];
	size_t n = 0;
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	n = (size_t)snprintf(line, sizeof(line), "acp-agent: %s: ", tags[level]);
	for (const unsigned char *p = (const unsigned char *)raw; *p && n + 5 < sizeof(line); p++) {
		if (*p < 0x20 || *p == 0x7f)
			n += (size_t)snprintf(line + n, sizeof(line) - n, "\\x%02x", *p);
		else
			line[n++] = (char)*p;
	}
	line[n++] = '\n';
	if (log_sink) {
		log_sink(log_sink_arg, line, n);
		return;
	}
	/* Best effort: a failed log write has nowhere else to go. */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}
