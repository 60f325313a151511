/* The chat's renderer: session updates, asks and answers as text a person reads. */
#include "chat/render.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "chat/ask.h"
#include "chat/diff.h"
#include "chat/texts.h"

#define CHAT_DIM "\033[2m"
#define CHAT_RED "\033[31m"
#define CHAT_GREEN "\033[32m"
#define CHAT_YELLOW "\033[33m"
#define CHAT_CYAN "\033[36m"
#define CHAT_BOLD "\033[1m"
#define CHAT_RESET "\033[0m"

/* What the renderer remembers of one tool call. */
struct chat_call {
	char *title;		/* owned */
	char *status;		/* owned; the last status shown, or NULL */
	char *progress;		/* owned; the progress text shown so far, or NULL */
	int diff_shown;		/* its diff was shown (by the ask), not again at the end */
};

void
chat_render_init(struct chat_render *r, int tty)
{
	memset(r, 0, sizeof(*r));
	r->tty = tty;
	r->col0 = 1;
	map_init(&r->calls);
}

static void
chat_call_free(struct chat_call *c)
{
	free(c->title);
	free(c->status);
	free(c->progress);
	free(c);
}

void
chat_render_free(struct chat_render *r)
{
	size_t pos = 0;
	const char *key;
	void *v;

	while (map_next(&r->calls, &pos, &key, &v))
		chat_call_free(v);
	map_free(&r->calls);
	free(r->msg_id);
}

void
chat_safe_append(struct buf *out, const char *text, size_t len)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t from = 0;

	for (size_t i = 0; i < len; i++) {
		char shown[3] = { '^', 0, 0 };
		size_t n = 1;
		if ((s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') || s[i] == 0x7f) {
			shown[1] = s[i] == 0x7f ? '?' : (char)(s[i] + 0x40);	/* ^[ ^G ^M ^? */
		} else if (s[i] == 0xc2 && i + 1 < len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f) {
			/* a C1 control in UTF-8 (U+0080-U+009F) is ESC and a letter to a terminal: ^[[ for CSI */
			shown[1] = '[';
			shown[2] = (char)(s[i + 1] - 0x40);
			n = 2;
		} else {
			continue;
		}
		buf_append(out, text + from, i - from);
		buf_append(out, shown, shown[2] ? 3 : 2);
		i += n - 1;
		from = i + 1;
	}
	buf_append(out, text + from, len - from);
}

/* Appends len bytes of text, in colour (NULL: none) on a terminal; the text's own control bytes
 * shown, never acted on (only the colours we add reach the terminal as such). */
static void
chat_put(struct chat_render *r, struct buf *out, const char *color, const char *text, size_t len)
{
	int nl;

	if (len == 0)
		return;
	r->at_prompt = 0;
	nl = text[len - 1] == '\n';
	if (!r->tty || color == NULL) {
		chat_safe_append(out, text, len);
	} else {
		/* The colour ends before the line does. */
		buf_puts(out, color);
		chat_safe_append(out, text, len - (size_t)nl);
		buf_puts(out, CHAT_RESET);
		if (nl)
			buf_puts(out, "\n");
	}
	r->col0 = nl;
}

static void
chat_puts(struct chat_render *r, struct buf *out, const char *color, const char *text)
{
	chat_put(r, out, color, text, strlen(text));
}

static void chat_printf(struct chat_render *r, struct buf *out, const char *color, const char *fmt,
    ...) __attribute__((format(printf, 4, 5)));

static void
chat_vprintf(struct chat_render *r, struct buf *out, const char *color, const char *fmt, va_list ap)
{
	char *s;

	if (vasprintf(&s, fmt, ap) < 0)
		return;
	chat_puts(r, out, color, s);
	free(s);
}

static void
chat_printf(struct chat_render *r, struct buf *out, const char *color, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	chat_vprintf(r, out, color, fmt, ap);
	va_end(ap);
}

void
chat_render_break(struct chat_render *r, struct buf *out)
{
	if (!r->col0)
		chat_puts(r, out, NULL, "\n");
}

/* Ends a streamed run of chunks: what follows starts on its own line. */
static void
chat_end_run(struct chat_render *r, struct buf *out)
{
	chat_render_break(r, out);
	r->run = CHAT_RUN_NONE;
}

/* Appends each line of text with a prefix, in colour; a text without a last '\n' gets one. At
 * most max lines (0: all), then a line saying how many were left out. */
static void
chat_lines(struct chat_render *r, struct buf *out, const char *prefix, const char *color,
    const char *text, size_t max)
{
	size_t n = 0;
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (max && n == max) {
			size_t left = 0;
			for (const char *q = p; *q; q++)
				left += *q == '\n' && q[1] != '\0';
			if (left == 0)
				chat_printf(r, out, CHAT_DIM, "%s" CHAT_MORE_LINE, prefix);
			else
				chat_printf(r, out, CHAT_DIM, "%s" CHAT_MORE_LINES, prefix, left + 1);
			return;
		}
		chat_puts(r, out, NULL, prefix);
		chat_put(r, out, color, p, len);
		chat_puts(r, out, NULL, "\n");
		n++;
		p += len + (nl ? 1 : 0);
	}
}

static const char *
chat_status_word(const char *status, const char **color)
{
	*color = CHAT_YELLOW;
	if (status == NULL)
		return CHAT_ST_RUNNING;
	if (strcmp(status, "pending") == 0)
		return CHAT_ST_PENDING;
	if (strcmp(status, "completed") == 0) {
		*color = CHAT_GREEN;
		return CHAT_ST_DONE;
	}
	if (strcmp(status, "failed") == 0) {
		*color = CHAT_RED;
		return CHAT_ST_FAILED;
	}
	return CHAT_ST_RUNNING;
}

/* "[done] Read a.txt" */
static void
chat_status_line(struct chat_render *r, struct buf *out, const struct chat_call *c)
{
	const char *color, *word = chat_status_word(c->status, &color);

	chat_end_run(r, out);
	chat_printf(r, out, color, "[%s]", word);
	chat_printf(r, out, CHAT_BOLD, " %s", c->title);
	chat_puts(r, out, NULL, "\n");
}

/* A `diff` content block: ---/+++ and the hunks, coloured on a terminal. */
static void
chat_diff_block(struct chat_render *r, struct buf *out, const json_t *d)
{
	const char *path = json_string_value(json_object_get(d, "path"));
	const char *old_text = json_string_value(json_object_get(d, "oldText"));
	const char *new_text = json_string_value(json_object_get(d, "newText"));
	struct buf hunks;
	const char *p;

	buf_init(&hunks);
	chat_diff(old_text, new_text ? new_text : "", &hunks);
	chat_printf(r, out, CHAT_BOLD, "  --- %s\n", old_text ? path ? path : "" : "/dev/null");
	chat_printf(r, out, CHAT_BOLD, "  +++ %s\n", path ? path : "");
	for (p = hunks.data; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = (size_t)(nl - p);
		const char *color = *p == '-' ? CHAT_RED : *p == '+' ? CHAT_GREEN : *p == '@' ? CHAT_CYAN :
		    NULL;
		chat_puts(r, out, NULL, "  ");
		chat_put(r, out, color, p, len);
		chat_puts(r, out, NULL, "\n");
		p = nl + 1;
	}
	buf_free(&hunks);
}

static struct chat_call *
chat_call_get(struct chat_render *r, const char *id, const char *title)
{
	struct chat_call *c = map_get(&r->calls, id);

	if (c == NULL) {
		c = xcalloc(1, sizeof(*c));
		c->title = xstrdup(title ? title : id);
		map_put(&r->calls, id, c);
	} else if (title && strcmp(title, c->title) != 0) {
		free(c->title);
		c->title = xstrdup(title);
	}
	return c;
}

/* Child progress (docs/contract.md §3.4): each update's content replaces the last, so what extends the text
 * shown is new; a text that does not extend it is shown from its start. Only whole lines are
 * shown: an unfinished last line waits for the update that ends it (or for the result). */
static void
chat_progress(struct chat_render *r, struct buf *out, struct chat_call *c, const char *text)
{
	size_t had = c->progress ? strlen(c->progress) : 0;
	const char *fresh = had && strncmp(text, c->progress, had) == 0 ? text + had : text;
	const char *last = strrchr(fresh, '\n');
	char *whole;

	if (last == NULL)
		return;
	whole = xstrndup(fresh, (size_t)(last - fresh + 1));
	free(c->progress);
	c->progress = xstrndup(text, (size_t)(last - text + 1));
	chat_end_run(r, out);
	chat_lines(r, out, "  | ", CHAT_DIM, whole, 0);
	free(whole);
}

/* The content blocks of a tool call (its result, a diff, a child's progress). */
static void
chat_call_content(struct chat_render *r, struct buf *out, struct chat_call *c, const json_t *content)
{
	size_t i;
	const json_t *blk;
	int running = c->status == NULL || strcmp(c->status, "in_progress") == 0 ||
	    strcmp(c->status, "pending") == 0;

	json_array_foreach(content, i, blk) {
		const char *type = json_string_value(json_object_get(blk, "type"));
		if (type && strcmp(type, "diff") == 0) {
			if (running || c->diff_shown)
				continue;	/* shown by the ask, or when the call ends */
			chat_end_run(r, out);
			chat_diff_block(r, out, blk);
			c->diff_shown = 1;
		} else if (type && strcmp(type, "content") == 0) {
			const json_t *inner = json_object_get(blk, "content");
			const char *text = json_string_value(json_object_get(inner, "text"));
			if (text == NULL || *text == '\0')
				continue;
			if (running) {
				chat_progress(r, out, c, text);
			} else {
				chat_end_run(r, out);
				chat_lines(r, out, "  ", CHAT_DIM, text, CHAT_SHOW_LINES);
			}
		}
	}
}

static void
chat_tool_call(struct chat_render *r, struct buf *out, const json_t *u, int is_update)
{
	const char *id = json_string_value(json_object_get(u, "toolCallId"));
	const char *title = json_string_value(json_object_get(u, "title"));
	const char *status = json_string_value(json_object_get(u, "status"));
	struct chat_call *c;

	if (id == NULL)
		return;
	c = chat_call_get(r, id, title);
	if (!is_update && status == NULL)
		status = "in_progress";
	if (status && (c->status == NULL || strcmp(status, c->status) != 0)) {
		free(c->status);
		c->status = xstrdup(status);
		/* A call that will ask is shown by its ask (chat_render_ask). */
		if (strcmp(status, "pending") != 0)
			chat_status_line(r, out, c);
	}
	chat_call_content(r, out, c, json_object_get(u, "content"));
}

static void
chat_chunk(struct chat_render *r, struct buf *out, const json_t *u, enum chat_run run)
{
	const char *text = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
	const char *mid = json_string_value(json_object_get(u, "messageId"));

	if (text == NULL)
		return;
	/* A new message (a notice, a command's answer) starts a paragraph of its own. */
	if (r->run != run || (mid && r->msg_id && strcmp(mid, r->msg_id) != 0)) {
		chat_end_run(r, out);
		r->run = run;
		if (run == CHAT_RUN_THOUGHT)
			chat_puts(r, out, CHAT_DIM, CHAT_THINKING);
	}
	free(r->msg_id);
	r->msg_id = mid ? xstrdup(mid) : NULL;
	chat_puts(r, out, run == CHAT_RUN_THOUGHT ? CHAT_DIM : NULL, text);
}

static void
chat_plan(struct chat_render *r, struct buf *out, const json_t *u)
{
	size_t i;
	const json_t *e;

	chat_end_run(r, out);
	if (json_array_size(json_object_get(u, "entries")) == 0) {
		chat_puts(r, out, CHAT_DIM, CHAT_PLAN_CLEARED);
		return;
	}
	chat_puts(r, out, CHAT_BOLD, CHAT_PLAN);
	json_array_foreach(json_object_get(u, "entries"), i, e) {
		const char *st = json_string_value(json_object_get(e, "status"));
		const char *text = json_string_value(json_object_get(e, "content"));
		const char *mark = st && strcmp(st, "completed") == 0 ? "[x]" :
		    st && strcmp(st, "in_progress") == 0 ? "[>]" : "[ ]";
		chat_printf(r, out, NULL, "  %s %s\n", mark, text ? text : "");
	}
}

static void
chat_commands(struct chat_render *r, struct buf *out, const json_t *u)
{
	size_t i;
	const json_t *c;

	struct buf line;

	buf_init(&line);
	buf_puts(&line, CHAT_COMMANDS);
	json_array_foreach(json_object_get(u, "availableCommands"), i, c) {
		const char *name = json_string_value(json_object_get(c, "name"));
		if (name)
			buf_printf(&line, " /%s", name);
	}
	buf_puts(&line, "\n");
	chat_end_run(r, out);
	chat_puts(r, out, CHAT_DIM, line.data);
	buf_free(&line);
}

static void
chat_compaction(struct chat_render *r, struct buf *out, const json_t *u)
{
	const char *st = json_string_value(json_object_get(u, "status"));
	const char *error = json_string_value(json_object_get(u, "error"));

	if (st == NULL)
		return;
	chat_end_run(r, out);
	if (strcmp(st, "in_progress") == 0)
		chat_puts(r, out, CHAT_DIM, CHAT_COMPACTING);
	else if (strcmp(st, "completed") == 0)
		chat_puts(r, out, CHAT_DIM, CHAT_COMPACTED);
	else if (strcmp(st, "failed") == 0)
		chat_printf(r, out, CHAT_RED, CHAT_COMPACT_FAILED, error ? error : "");
	else if (strcmp(st, "cancelled") == 0)
		chat_puts(r, out, CHAT_DIM, CHAT_COMPACT_CANCELLED);
}

void
chat_render_update(struct chat_render *r, const json_t *u, struct buf *out)
{
	const char *kind = json_string_value(json_object_get(u, "sessionUpdate"));

	if (kind == NULL)
		return;
	if (strcmp(kind, "agent_message_chunk") == 0) {
		chat_chunk(r, out, u, CHAT_RUN_TEXT);
	} else if (strcmp(kind, "agent_thought_chunk") == 0) {
		chat_chunk(r, out, u, CHAT_RUN_THOUGHT);
	} else if (strcmp(kind, "user_message_chunk") == 0) {
		/* A resumed session's history: the person's own prompts. */
		const char *text = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
		chat_end_run(r, out);
		if (text)
			chat_lines(r, out, CHAT_PROMPT, CHAT_BOLD, text, 0);
	} else if (strcmp(kind, "tool_call") == 0) {
		chat_tool_call(r, out, u, 0);
	} else if (strcmp(kind, "tool_call_update") == 0) {
		chat_tool_call(r, out, u, 1);
	} else if (strcmp(kind, "plan") == 0) {
		chat_plan(r, out, u);
	} else if (strcmp(kind, "available_commands_update") == 0) {
		chat_commands(r, out, u);
	} else if (strcmp(kind, "current_mode_update") == 0) {
		const char *m = json_string_value(json_object_get(u, "currentModeId"));
		chat_end_run(r, out);
		chat_printf(r, out, CHAT_DIM, CHAT_MODE, m ? m : "");
	} else if (strcmp(kind, "compaction_update") == 0) {
		chat_compaction(r, out, u);
	}
	/* usage_update, config_option_update and kinds this client does not know: nothing to read. */
}

void
chat_render_ask(struct chat_render *r, const json_t *params, const char *whose, struct buf *out)
{
	const json_t *call = json_object_get(params, "toolCall");
	const json_t *options = json_object_get(params, "options");
	const char *id = json_string_value(json_object_get(call, "toolCallId"));
	const char *title = json_string_value(json_object_get(call, "title"));
	const char *cmd = json_string_value(json_object_get(json_object_get(call, "rawInput"), "command"));
	struct chat_call *c = id ? chat_call_get(r, id, title) : NULL;
	const json_t *blk;
	size_t i;
	struct buf menu;

	chat_end_run(r, out);
	if (whose)
		chat_printf(r, out, CHAT_YELLOW, CHAT_ASK_CHILD_HEAD, whose, title ? title : c ? c->title : "a tool call");
	else
		chat_printf(r, out, CHAT_YELLOW, CHAT_ASK_HEAD, title ? title : c ? c->title : "a tool call");
	if (cmd)
		chat_lines(r, out, "  $ ", CHAT_BOLD, cmd, 0);
	json_array_foreach(json_object_get(call, "content"), i, blk) {
		const char *type = json_string_value(json_object_get(blk, "type"));
		if (type && strcmp(type, "diff") == 0) {
			chat_diff_block(r, out, blk);
			if (c)
				c->diff_shown = 1;
		}
	}
	buf_init(&menu);
	chat_ask_menu(options, &menu);
	chat_printf(r, out, CHAT_BOLD, "  %s\n", menu.data ? menu.data : "");
	buf_free(&menu);
}

void
chat_render_answer(struct chat_render *r, const char *name, struct buf *out)
{
	chat_render_break(r, out);
	chat_printf(r, out, CHAT_DIM, CHAT_ASK_ANSWER, name);
}

void
chat_render_turn_end(struct chat_render *r, const char *stop_reason, struct buf *out)
{
	chat_end_run(r, out);
	if (stop_reason == NULL || strcmp(stop_reason, "end_turn") == 0)
		return;
	if (strcmp(stop_reason, "cancelled") == 0)
		chat_puts(r, out, CHAT_DIM, CHAT_CANCELLED);
	else
		chat_printf(r, out, CHAT_DIM, CHAT_STOPPED, stop_reason);
}

void
chat_render_error(struct chat_render *r, const json_t *error, struct buf *out)
{
	const char *msg = json_string_value(json_object_get(error, "message"));
	const char *details = json_string_value(json_object_get(json_object_get(error, "data"), "details"));
	char *text = xasprintf("%s%s%s", msg ? msg : "error", details ? ": " : "", details ? details : "");

	chat_end_run(r, out);
	chat_printf(r, out, CHAT_RED, CHAT_ERROR, text);
	free(text);
}

void
chat_render_note(struct chat_render *r, struct buf *out, const char *fmt, ...)
{
	va_list ap;

	chat_end_run(r, out);
	va_start(ap, fmt);
	chat_vprintf(r, out, CHAT_DIM, fmt, ap);
	va_end(ap);
}

void
chat_render_aside(struct chat_render *r, struct buf *out, const char *prefix, const char *text, size_t len)
{
	chat_end_run(r, out);
	chat_put(r, out, CHAT_DIM, prefix, strlen(prefix));
	buf_append(out, text, len);
	buf_puts(out, "\n");
	r->col0 = 1;
}

void
chat_render_prompt_sent(struct chat_render *r, const char *line, int echoed, struct buf *out)
{
	if (echoed) {
		r->run = CHAT_RUN_NONE;	/* the terminal showed it after the input prompt */
		return;
	}
	chat_end_run(r, out);
	chat_lines(r, out, CHAT_PROMPT, CHAT_BOLD, line, 0);
}

void
chat_render_input_prompt(struct chat_render *r, struct buf *out)
{
	chat_end_run(r, out);
	if (r->tty) {
		chat_puts(r, out, CHAT_BOLD, CHAT_PROMPT);
		r->col0 = 0;
		r->at_prompt = 1;
	}
}
