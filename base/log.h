/* stderr logger: one escaped line per event, level checked before formatting. */
#ifndef BASE_LOG_H
#define BASE_LOG_H

#include <stddef.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Takes one finished line (escaped, with its '\n'); line is borrowed for the call. */
typedef void log_sink_fn(void *arg, const char *line, size_t len);

/* Set once at start-up, read-only afterwards. */
void log_set_level(enum log_level level);
/* Sends lines to fn instead of fd 2 (tests capture what they provoke); NULL: fd 2 again. */
void log_set_sink(log_sink_fn *fn, void *arg);
int log_parse_level(const char *s, enum log_level *out);	/* 0 or -1 */
int log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) do { if (log_enabled(LOG_INFO)) log_msg(LOG_INFO, __VA_ARGS__); } while (0)
#define log_debug(...) do { if (log_enabled(LOG_DEBUG)) log_msg(LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
