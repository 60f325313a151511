/* The chat's client loop: the child agent, ACP both ways, the person's input. */
#include "chat/client.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "base/buf.h"
#include "base/reader.h"
#include "base/spawn.h"
#include "base/wq.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "chat/ask.h"
#include "chat/bottom.h"
#include "chat/children.h"
#include "chat/commands.h"
#include "chat/edit.h"
#include "chat/input.h"
#include "chat/render.h"
#include "chat/term.h"
#include "chat/texts.h"

#define CHAT_REAP_TICK 0.05	/* seconds between waitpid polls while the agent exits */

extern char **environ;

/*
 * One chat. Invariants: prompt_id is non-zero exactly while a session/prompt is unanswered; asks
 * holds the agent's unanswered permission requests in arrival order, the first one shown; lines
 * holds what was typed and not used yet. Once quitting, nothing is sent but stdin's close.
 */
struct chat {
	struct ev_loop *loop;
	const struct chat_opts *o;
	struct chat_term term;
	struct chat_input in;
	struct chat_render render;
	struct chat_children kids;	/* the children the agent shows as sessions of their own */
	struct chat_edit ed;		/* the line editor, on a terminal with libedit */
	struct chat_bottom bottom;	/* what stays below the output while the editor is used */
	int editing;			/* the editor is used (else lines come from the frame) */
	int typing;			/* a line is being typed while a turn runs: the editor stays */
	ev_signal sigwinch, sigquit, sigtstp, sigcont;
	struct buf screen;		/* rendered, not yet written */
	ev_prepare flush;		/* writes screen before the loop sleeps */
	pid_t pid;			/* the agent; 0 once reaped */
	int status;			/* its wait status, once reaped */
	struct wq to_agent;
	int to_open;
	struct reader from_agent;
	int from_open;
	ev_signal sigint, sigterm, sighup;
	ev_timer reap;
	double waited;			/* seconds since the agent's stdin closed */
	json_int_t next_id, init_id, sess_id, prompt_id;
	char *session;			/* owned; the session's id once it is ready */
	json_t *lines;			/* owned array of {text, echoed} */
	json_t *asks;			/* owned array of request messages */
	json_t *config;			/* owned: the session's configOptions as last told, or NULL */
	json_t *attach;			/* owned: image blocks for the next prompt (/image) */
	json_int_t config_req;		/* the /model or /mode request unanswered, or 0 */
	json_int_t list_req;		/* --list: the session/list page asked for, or 0 */
	size_t listed;			/* --list: sessions printed so far */
	char *list_cursor;		/* --list: the cursor of the page asked for last (owned) */
	char config_what[8];		/* which of the two it set */
	int ready, in_eof, quitting, gone, exit_code;
	int greet;			/* the session is ready: prompt once its first updates are shown */
};

static void chat_quit(struct chat *c);
static void chat_pump(struct chat *c);
static void chat_option(const json_t *config, const char *id, char **value, char **choices);

/* Whether the editor's prompt belongs at the bottom now: the session is ready, nothing is asked,
 * and no turn runs, or the person types while it runs (a key came, or a line is begun). */
static int
chat_wants_edit(const struct chat *c)
{
	return c->ready && !c->quitting && !c->in_eof && json_array_size(c->asks) == 0 &&
	    (c->prompt_id == 0 || c->typing || c->in.paused);
}

static void
chat_flush_screen(struct chat *c)
{
	if (c->editing) {
		/* output above the bottom: the ask, else the prompt and the line being typed */
		if (c->screen.len > 0 || chat_wants_edit(c) != c->ed.shown || (c->bottom.ask.len > 0) != c->bottom.ask_shown)
			chat_bottom_flush(&c->bottom, &c->ed, c->screen.data ? c->screen.data : "", c->screen.len,
			    chat_wants_edit(c));
		/* keys are read again once they have a place: the editor drawn, or an ask shown */
		if (c->in.paused && !c->quitting && (c->ed.shown || c->in.keys)) {
			c->typing = c->ed.shown;	/* drawn for a key: it stays until its line is entered */
			chat_input_resume(&c->in);
		}
	} else if (c->screen.len > 0) {
		chat_term_write(c->screen.data, c->screen.len);
	}
	c->screen.len = 0;
	if (c->screen.data)
		c->screen.data[0] = '\0';
}

static void chat_input_prompt(struct chat *c);

/* Before the loop sleeps: a session just ready gets its input prompt (after the updates that came
 * with its answer, the slash commands), what was typed ahead goes, and the screen is written. */
static void
chat_flush_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct chat *c = w->data;

	(void)loop;
	(void)revents;
	if (c->greet) {
		c->greet = 0;
		chat_pump(c);
		chat_input_prompt(c);	/* unless a line typed ahead went */
	}
	chat_flush_screen(c);
}

/* Sends msg to the agent; steals msg. */
static void
chat_send_new(struct chat *c, json_t *msg)
{
	if (c->to_open && !c->quitting)
		wq_push(&c->to_agent, msg);
	json_decref(msg);
}

/* Sends a request; returns its id. params: stolen. */
static json_int_t
chat_request_new(struct chat *c, const char *method, json_t *params)
{
	json_int_t id = ++c->next_id;

	chat_send_new(c, xjson_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", id, "method", method,
	    "params", params));
	return id;
}

static void
chat_input_prompt(struct chat *c)
{
	if (c->editing)
		return;		/* the editor's prompt: drawn by the flush, below the output */
	if (c->ready && !c->quitting && c->prompt_id == 0 && json_array_size(c->asks) == 0 && c->term.tty_in)
		chat_render_input_prompt(&c->render, &c->screen);
}

/* ---- asks ---- */

static void
chat_show_ask(struct chat *c)
{
	json_t *req = json_array_get(c->asks, 0);

	if (req == NULL) {
		if (!c->editing)
			chat_term_keys(&c->term, 0);
		c->in.keys = 0;
		chat_input_prompt(c);
		return;
	}
	/* With the editor the ask stays at the bottom, below any later output, until answered. */
	struct buf *to = c->editing ? &c->bottom.ask : &c->screen;
	if (c->editing)
		chat_render_break(&c->render, &c->screen);
	/* a child's ask says whose it is; its call is its renderer's */
	if (!chat_children_ask(&c->kids, &c->render, json_object_get(req, "params"), to))
		chat_render_ask(&c->render, json_object_get(req, "params"), NULL, to);
	if (c->editing) {
		c->in.keys = 1;		/* the editor's raw mode reads one key already */
	} else if (c->term.tty_in) {
		chat_term_keys(&c->term, 1);
		c->in.keys = 1;
	}
}

/* Answers the shown ask with outcome (stolen) and shows the next one. */
static void
chat_answer_new(struct chat *c, json_t *outcome)
{
	json_t *req = json_array_get(c->asks, 0);

	chat_send_new(c, xjson_pack("{s:s, s:O, s:{s:o}}", "jsonrpc", "2.0", "id", json_object_get(req, "id"),
	    "result", "outcome", outcome));
	json_array_remove(c->asks, 0);
	chat_show_ask(c);
}

/* A key (or a line's one character) for the shown ask. */
static void
chat_answer_key(struct chat *c, int key)
{
	json_t *req = json_array_get(c->asks, 0);
	const json_t *options = json_object_get(json_object_get(req, "params"), "options");
	const json_t *opt = chat_ask_option(options, key);

	if (opt == NULL) {
		struct buf keys;
		buf_init(&keys);
		chat_ask_keys(options, &keys);
		chat_render_note(&c->render, &c->screen, CHAT_ASK_AGAIN, keys.data ? keys.data : "");
		buf_free(&keys);
		return;
	}
	const char *name = json_string_value(json_object_get(opt, "name"));
	chat_bottom_ask_done(&c->bottom, &c->screen);	/* the ask is output now, its answer after it */
	chat_render_answer(&c->render, name ? name : json_string_value(json_object_get(opt, "optionId")),
	    &c->screen);
	chat_answer_new(c, xjson_pack("{s:s, s:O}", "outcome", "selected", "optionId",
	    json_object_get(opt, "optionId")));
}

/* Every unanswered ask answered cancelled (before a session/cancel, as ACP asks). */
static void
chat_cancel_asks(struct chat *c)
{
	while (json_array_size(c->asks) > 0) {
		json_t *req = json_array_get(c->asks, 0);
		chat_send_new(c, xjson_pack("{s:s, s:O, s:{s:{s:s}}}", "jsonrpc", "2.0", "id",
		    json_object_get(req, "id"), "result", "outcome", "outcome", "cancelled"));
		json_array_remove(c->asks, 0);
	}
	chat_bottom_ask_done(&c->bottom, &c->screen);
	if (!c->editing)
		chat_term_keys(&c->term, 0);
	c->in.keys = 0;
}

/* $/cancel_request: the agent no longer waits for that ask. */
static void
chat_withdraw(struct chat *c, const json_t *req_id)
{
	size_t i;
	json_t *req;

	json_array_foreach(c->asks, i, req) {
		if (!json_equal(json_object_get(req, "id"), (json_t *)req_id))
			continue;
		json_array_remove(c->asks, i);
		if (i == 0) {
			chat_bottom_ask_done(&c->bottom, &c->screen);
			chat_render_note(&c->render, &c->screen, CHAT_ASK_WITHDRAWN);
			chat_show_ask(c);
		}
		return;
	}
}

/* ---- the agent's messages ---- */

static void
chat_session_ready(struct chat *c, const json_t *result)
{
	const char *sid = c->o->session ? c->o->session :
	    json_string_value(json_object_get(result, "sessionId"));

	if (sid == NULL) {
		fprintf(stderr, CHAT_E_PREFIX CHAT_E_NEW "\n", "the answer has no sessionId");
		c->exit_code = 1;
		chat_quit(c);
		return;
	}
	c->session = xstrdup(sid);
	c->config = json_incref(json_object_get(result, "configOptions"));
	c->ready = 1;
	c->greet = 1;
	chat_render_note(&c->render, &c->screen, CHAT_SESSION_LINE, c->session);
	/* the banner: the model and mode the answer gives, and the folder of a new session */
	const char *model = NULL, *mode = json_string_value(json_object_get(json_object_get(result, "modes"),
	    "currentModeId"));
	size_t i;
	const json_t *opt;
	char cwd[PATH_MAX];
	json_array_foreach(json_object_get(result, "configOptions"), i, opt) {
		const char *id = json_string_value(json_object_get(opt, "id"));
		if (id && strcmp(id, "model") == 0)
			model = json_string_value(json_object_get(opt, "currentValue"));
	}
	int here = c->o->session == NULL && getcwd(cwd, sizeof(cwd)) != NULL;
	chat_render_note(&c->render, &c->screen, CHAT_BANNER_LINE, model ? model : "?", mode ? mode : "?",
	    here ? ", in " : "", here ? cwd : "");
}

/* The agent's options the chat was started with, each " <arg>" quoted for a POSIX shell (owned):
 * what resuming needs (--state-dir, --model, --profile …), as they were typed. */
static char *
chat_resume_options(char *const *argv)
{
	struct buf b;

	buf_init(&b);
	for (size_t i = 1; argv[i]; i++) {
		const char *a = argv[i];
		buf_puts(&b, " ");
		if (*a && strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+,-") == strlen(a)) {
			buf_puts(&b, a);
			continue;
		}
		buf_puts(&b, "'");
		for (; *a; a++)
			buf_puts(&b, *a == '\'' ? "'\\''" : (char[]){ *a, 0 });
		buf_puts(&b, "'");
	}
	return b.data ? buf_steal(&b) : xstrdup("");
}

/* --list: a page of session/list printed, newest first; the next asked for, or the chat ends. */
static void
chat_list_page(struct chat *c, const json_t *result, const json_t *error)
{
	const json_t *s, *next = json_object_get(result, "nextCursor");
	size_t i;

	c->list_req = 0;
	if (error) {
		chat_render_error(&c->render, error, &c->screen);
		c->exit_code = 1;
		chat_quit(c);
		return;
	}
	json_array_foreach(json_object_get(result, "sessions"), i, s) {
		const char *id = json_string_value(json_object_get(s, "sessionId"));
		const char *when = json_string_value(json_object_get(s, "updatedAt"));
		const char *title = json_string_value(json_object_get(s, "title"));
		const char *cwd = json_string_value(json_object_get(s, "cwd"));
		char *line = xasprintf(CHAT_LIST_LINE, id ? id : "?", when ? when : "?", cwd ? cwd : "?",
		    title ? title : CHAT_LIST_UNTITLED);
		struct buf safe;
		buf_init(&safe);
		chat_safe_append(&safe, line, strlen(line));	/* the agent's (and a person's) words: shown only */
		buf_append(&c->screen, safe.data, safe.len);
		buf_puts(&c->screen, "\n");
		buf_free(&safe);
		free(line);
		c->listed++;
	}
	if (json_is_string(next) && (c->list_cursor == NULL || strcmp(c->list_cursor, json_string_value(next)) != 0)) {
		free(c->list_cursor);
		c->list_cursor = xstrdup(json_string_value(next));	/* the same cursor twice: the end */
		c->list_req = chat_request_new(c, "session/list", xjson_pack("{s:O}", "cursor", next));
		return;
	}
	if (c->listed == 0)
		chat_render_note(&c->render, &c->screen, CHAT_LIST_NONE, c->o->state_dir ? c->o->state_dir : "?");
	chat_quit(c);
}

/* An error answer to initialize (init) or session/new|load: says why on stderr, ends with 1. */
static void
chat_start_failed(struct chat *c, int init, const json_t *error)
{
	const char *msg = json_string_value(json_object_get(error, "message"));
	const char *details = json_string_value(json_object_get(json_object_get(error, "data"), "details"));
	char *raw = xasprintf("%s%s%s", msg ? msg : "error", details ? ": " : "", details ? details : "");
	struct buf safe;
	char *why;

	buf_init(&safe);
	chat_safe_append(&safe, raw, strlen(raw));	/* the agent's words: shown, never acted on */
	free(raw);
	why = buf_steal(&safe);
	if (init)
		fprintf(stderr, CHAT_E_PREFIX CHAT_E_INIT "\n", why);
	else if (c->o->session)
		fprintf(stderr, CHAT_E_PREFIX CHAT_E_LOAD "\n", c->o->session, why);
	else
		fprintf(stderr, CHAT_E_PREFIX CHAT_E_NEW "\n", why);
	free(why);
	c->exit_code = 1;
	chat_quit(c);
}

static void
chat_on_response(struct chat *c, const json_t *msg)
{
	json_int_t id = json_integer_value(json_object_get(msg, "id"));
	const json_t *error = json_object_get(msg, "error");
	const json_t *result = json_object_get(msg, "result");

	if (!json_is_integer(json_object_get(msg, "id")) || id == 0)
		return;
	if (id == c->init_id) {
		if (error) {
			chat_start_failed(c, 1, error);
			return;
		}
		char cwd[PATH_MAX];
		if (c->o->list) {
			c->list_req = chat_request_new(c, "session/list", json_object());
		} else if (c->o->session) {
			c->sess_id = chat_request_new(c, "session/load", xjson_pack("{s:s, s:[]}", "sessionId",
			    c->o->session, "mcpServers"));
		} else if (getcwd(cwd, sizeof(cwd)) == NULL) {
			fprintf(stderr, CHAT_E_PREFIX CHAT_E_CWD "\n", strerror(errno));
			c->exit_code = 1;
			chat_quit(c);
		} else {
			c->sess_id = chat_request_new(c, "session/new", xjson_pack("{s:s, s:[]}", "cwd", cwd,
			    "mcpServers"));
		}
	} else if (id == c->sess_id) {
		if (error)
			chat_start_failed(c, 0, error);
		else
			chat_session_ready(c, result);
	} else if (id == c->list_req) {
		chat_list_page(c, result, error);
	} else if (id == c->config_req) {
		c->config_req = 0;
		if (error) {
			chat_render_error(&c->render, error, &c->screen);
		} else {
			json_decref(c->config);
			c->config = json_incref(json_object_get(result, "configOptions"));
			if (strcmp(c->config_what, "model") == 0) {	/* a mode change says so in its update */
				char *value, *choices;
				chat_option(c->config, "model", &value, &choices);
				chat_render_note(&c->render, &c->screen, CHAT_MODEL_NOW, value);
				free(value);
				free(choices);
			}
		}
	} else if (id == c->prompt_id) {
		c->prompt_id = 0;
		if (error)
			chat_render_error(&c->render, error, &c->screen);
		else
			chat_render_turn_end(&c->render,
			    json_string_value(json_object_get(result, "stopReason")), &c->screen);
		chat_pump(c);
		chat_input_prompt(c);	/* unless a line typed ahead went */
	}
}

/* A request from the agent: asks are queued for the person; anything else is refused (the
 * client advertises no fs or terminal capability, so none is expected). */
static void
chat_on_request(struct chat *c, json_t *msg)
{
	const char *method = json_string_value(json_object_get(msg, "method"));

	if (strcmp(method, "session/request_permission") == 0) {
		json_array_append(c->asks, msg);
		if (json_array_size(c->asks) == 1)
			chat_show_ask(c);
		chat_pump(c);
		return;
	}
	chat_send_new(c, xjson_pack("{s:s, s:O, s:{s:i, s:s, s:{s:s}}}", "jsonrpc", "2.0", "id",
	    json_object_get(msg, "id"), "error", "code", -32601, "message", "Method not found", "data",
	    "method", method));
}

static void
chat_on_notification(struct chat *c, const json_t *msg)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	const json_t *params = json_object_get(msg, "params");

	if (strcmp(method, "session/update") == 0) {
		const char *sid = json_string_value(json_object_get(params, "sessionId"));
		const char *root = c->session ? c->session : c->o->session;	/* known before a load's answer */
		if (chat_children_update(&c->kids, &c->render, root, sid, json_object_get(params, "update"), &c->screen))
			return;
		if (root && sid && strcmp(sid, root) != 0)
			return;
		const json_t *up = json_object_get(params, "update");
		const char *kind = json_string_value(json_object_get(up, "sessionUpdate"));
		if (kind && strcmp(kind, "config_option_update") == 0) {
			json_decref(c->config);
			c->config = json_incref(json_object_get(up, "configOptions"));
		}
		chat_render_update(&c->render, json_object_get(params, "update"), &c->screen);
	} else if (strcmp(method, "$/cancel_request") == 0) {
		chat_withdraw(c, json_object_get(params, "requestId"));
	}
}

static void
chat_agent_line(void *arg, const char *line, size_t len)
{
	struct chat *c = arg;
	json_t *msg = json_loadb(line, len, JSON_ALLOW_NUL, NULL);

	if (!json_is_object(msg)) {
		json_decref(msg);
		return;		/* the agent writes only JSON-RPC there; anything else is not ours */
	}
	if (json_is_string(json_object_get(msg, "method"))) {
		if (json_object_get(msg, "id"))
			chat_on_request(c, msg);
		else
			chat_on_notification(c, msg);
	} else {
		chat_on_response(c, msg);
	}
	json_decref(msg);
}

static void
chat_agent_overlong(void *arg)
{
	(void)arg;	/* a line over 64 MiB from the agent: dropped */
}

/* The agent closed its output: it is exiting (or gone). */
static void
chat_agent_eof(void *arg)
{
	struct chat *c = arg;

	reader_pause(&c->from_agent);
	if (!c->quitting)
		c->gone = 1;
	chat_quit(c);
}

static void
chat_agent_write_error(void *arg)
{
	struct chat *c = arg;

	if (!c->quitting)
		c->gone = 1;
	chat_quit(c);
}

/* ---- the person's input ---- */

/* echoed: the terminal showed the line right after the input prompt (else it is shown now). */
static void
chat_send_prompt(struct chat *c, const char *line, int echoed)
{
	json_t *prompt = xjson_pack("[{s:s, s:s}]", "type", "text", "text", line);
	size_t n = json_array_size(c->attach);

	chat_render_prompt_sent(&c->render, line, echoed, &c->screen);
	if (n > 0) {
		chat_render_note(&c->render, &c->screen, CHAT_IMAGES_SENT, n, n == 1 ? "" : "s");
		json_array_extend(prompt, c->attach);
		json_array_clear(c->attach);
	}
	c->prompt_id = chat_request_new(c, "session/prompt", xjson_pack("{s:s, s:o}", "sessionId", c->session,
	    "prompt", prompt));
}

/* The value and the choices of configOptions' option id, as "value" and "a, b, c" (owned). */
static void
chat_option(const json_t *config, const char *id, char **value, char **choices)
{
	struct buf b;
	size_t i, k;
	const json_t *opt, *v;

	*value = NULL;
	buf_init(&b);
	json_array_foreach(config, i, opt) {
		const char *oid = json_string_value(json_object_get(opt, "id"));
		if (oid == NULL || strcmp(oid, id) != 0)
			continue;
		const char *cur = json_string_value(json_object_get(opt, "currentValue"));
		*value = xstrdup(cur ? cur : "?");
		json_array_foreach(json_object_get(opt, "options"), k, v) {
			const char *val = json_string_value(json_object_get(v, "value"));
			if (val)
				buf_printf(&b, "%s%s", b.len ? ", " : "", val);
		}
	}
	if (*value == NULL)
		*value = xstrdup("?");
	*choices = b.len ? buf_steal(&b) : xstrdup("?");
}

/* A line that is one of the chat's own commands: acted on, 1; else 0 (a prompt). */
static int
chat_run_command(struct chat *c, const char *line, int echoed)
{
	const char *arg;
	size_t len;
	enum chat_cmd cmd = chat_command(line, &arg, &len);
	const char *what = cmd == CHAT_CMD_MODEL ? "model" : "mode";

	switch (cmd) {
	case CHAT_CMD_NONE:
		return 0;
	case CHAT_CMD_HELP:
		/* the chat's own, then the agent's (its /help) */
		chat_render_prompt_sent(&c->render, line, echoed, &c->screen);
		chat_render_note(&c->render, &c->screen, "%s", CHAT_HELP);
		c->prompt_id = chat_request_new(c, "session/prompt", xjson_pack("{s:s, s:[{s:s, s:s}]}", "sessionId",
		    c->session, "prompt", "type", "text", "text", "/help"));
		return 1;
	case CHAT_CMD_IMAGE: {
		char err[200], *path = xstrndup(arg, len);
		size_t bytes = 0;
		json_t *blk = len ? chat_image_block(path, err, sizeof(err), &bytes) : NULL;
		chat_render_prompt_sent(&c->render, line, echoed, &c->screen);
		if (len == 0)
			chat_render_note(&c->render, &c->screen, "%s", CHAT_IMAGE_USAGE);
		else if (blk == NULL)
			chat_render_note(&c->render, &c->screen, CHAT_IMAGE_ERROR, path, err);
		else {
			chat_render_note(&c->render, &c->screen, CHAT_IMAGE_ATTACHED, path,
			    json_string_value(json_object_get(blk, "mimeType")), bytes);
			json_array_append_new(c->attach, blk);
		}
		free(path);
		return 1;
	}
	case CHAT_CMD_MODEL:
	case CHAT_CMD_MODE:
		chat_render_prompt_sent(&c->render, line, echoed, &c->screen);
		if (len == 0 || c->config_req) {
			char *value, *choices;
			chat_option(c->config, what, &value, &choices);
			chat_render_note(&c->render, &c->screen, CHAT_OPTION_NOW, what, value, choices);
			free(value);
			free(choices);
			return 1;
		}
		snprintf(c->config_what, sizeof(c->config_what), "%s", what);
		c->config_req = chat_request_new(c, "session/set_config_option", xjson_pack("{s:s, s:s, s:s%}",
		    "sessionId", c->session, "configId", what, "value", arg, len));
		return 1;
	}
	return 0;
}

/* Uses what was typed: an answer to the shown ask (without a terminal), or the next prompt once
 * no turn runs; ends the chat at EOF once nothing typed is left. */
static void
chat_pump(struct chat *c)
{
	if (c->greet)
		return;		/* chat_flush_cb pumps once the session's first updates are shown */
	while (c->ready && !c->quitting && json_array_size(c->lines) > 0) {
		const json_t *head = json_array_get(c->lines, 0);
		char *line = xstrdup(json_string_value(json_object_get(head, "text")));
		int echoed = json_is_true(json_object_get(head, "echoed"));
		if (json_array_size(c->asks) > 0 && !c->term.tty_in) {
			json_array_remove(c->lines, 0);
			chat_answer_key(c, chat_ask_line_key(line));
		} else if (json_array_size(c->asks) == 0 && c->prompt_id == 0) {
			json_array_remove(c->lines, 0);
			if (line[strspn(line, " \t\r")] != '\0' && !chat_run_command(c, line, echoed))
				chat_send_prompt(c, line, echoed);
		} else {
			free(line);
			break;
		}
		free(line);
	}
	if (c->ready && c->in_eof && json_array_size(c->lines) == 0 &&
	    (c->term.tty_in || json_array_size(c->asks) > 0 || c->prompt_id == 0))
		chat_quit(c);
}

static void
chat_on_line(void *arg, const char *line, size_t len)
{
	struct chat *c = arg;
	/* Typed right after the input prompt, the terminal showed it in place; typed ahead while
	 * output ran, it is shown again when it is sent. */
	int echoed = c->term.tty_in && c->render.at_prompt;

	c->render.at_prompt = 0;
	if (echoed)
		c->render.col0 = 1;	/* its Enter ended the prompt's line */
	json_array_append_new(c->lines, xjson_pack("{s:o, s:b}", "text", xjson_text(line, len), "echoed", echoed));
	chat_pump(c);
}

/* A prompt the editor read (a line, or lines joined): it stays on the screen when it goes now;
 * typed while a turn runs, it is taken off and shown when it is sent. */
static void
chat_on_edit_line(void *arg, const char *line, size_t len)
{
	struct chat *c = arg;
	int now = c->ready && c->prompt_id == 0 && json_array_size(c->asks) == 0 && json_array_size(c->lines) == 0;

	chat_bottom_entered(&c->bottom, &c->ed, now);
	c->typing = 0;
	c->render.at_prompt = 0;
	if (now)
		c->render.col0 = 1;	/* its Enter ended the prompt's line */
	json_array_append_new(c->lines, xjson_pack("{s:o, s:b}", "text", xjson_text(line, len), "echoed", now));
	chat_pump(c);
}

static void
chat_on_key(void *arg, int key)
{
	struct chat *c = arg;

	if (key == 4) {		/* Ctrl-D */
		c->in_eof = 1;
		chat_render_break(&c->render, &c->screen);
		chat_quit(c);
	} else if (json_array_size(c->asks) > 0) {
		chat_answer_key(c, key);
	}
}

static void
chat_on_eof(void *arg)
{
	struct chat *c = arg;

	c->in_eof = 1;
	if (c->term.tty_in)
		chat_render_break(&c->render, &c->screen);
	if (!c->ready)
		return;		/* ends once the session is ready and what was typed is used */
	chat_pump(c);
}

/* Ctrl-C: cancels the turn (the asks answered cancelled first); ignored when idle. */
static void
chat_sigint_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct chat *c = w->data;

	(void)loop;
	(void)revents;
	if (!c->ready || c->quitting)
		return;
	if (c->prompt_id == 0 && json_array_size(c->asks) == 0) {
		if (c->editing) {
			/* the line being typed is dropped: taken off as it is drawn, then a fresh prompt */
			chat_bottom_lift(&c->bottom, &c->ed);
			chat_edit_drop(&c->ed);
			chat_flush_screen(c);
		} else if (c->term.tty_in) {
			/* The terminal dropped the line being typed: a fresh prompt. */
			c->render.col0 = 0;
			chat_input_prompt(c);
		}
		return;
	}
	chat_cancel_asks(c);
	chat_send_new(c, xjson_pack("{s:s, s:s, s:{s:s}}", "jsonrpc", "2.0", "method", "session/cancel",
	    "params", "sessionId", c->session));
	chat_render_note(&c->render, &c->screen, CHAT_CANCELLING);
}

static void
chat_sigwinch_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct chat *c = w->data;

	(void)loop;
	(void)revents;
	chat_bottom_lift(&c->bottom, &c->ed);	/* as it was drawn, then again at the new width */
	chat_bottom_width(&c->bottom);
	chat_edit_resize(&c->ed);
	chat_flush_screen(c);
}

/* Ctrl-Z with the editor: the bottom taken away and the terminal as the shell gave it, then
 * stopped; SIGCONT (fg) makes it raw again and draws the bottom. */
static void
chat_sigtstp_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct chat *c = w->data;

	(void)loop;
	(void)revents;
	chat_bottom_lift(&c->bottom, &c->ed);
	chat_edit_suspend(&c->ed);
	raise(SIGSTOP);
}

static void
chat_sigcont_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct chat *c = w->data;

	(void)loop;
	(void)revents;
	chat_edit_continue(&c->ed);
	c->ed.shown = 0;
	chat_flush_screen(c);
}

static void
chat_sigstop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	chat_quit(w->data);
}

/* ---- the child ---- */

/* Reads what the agent wrote before it exited (a pipe still holding its last answers). */
static void
chat_drain_agent(struct chat *c)
{
	char chunk[65536];
	ssize_t n;

	if (!c->from_open)
		return;
	while ((n = read(c->from_agent.fd, chunk, sizeof(chunk))) > 0)
		frame_feed(&c->from_agent.frame, chunk, (size_t)n);
}

/* Reaps the agent when it has exited, and what is left of its process group. */
static int
chat_reap_now(struct chat *c)
{
	pid_t r;

	if (c->pid == 0)
		return 1;
	do
		r = waitpid(c->pid, &c->status, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 0;
	kill(-c->pid, SIGKILL);
	c->pid = 0;
	return 1;
}

static void
chat_reap_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct chat *c = w->data;
	double before = c->waited;

	(void)revents;
	c->waited += CHAT_REAP_TICK;
	if (!chat_reap_now(c)) {
		if (before < CHAT_GRACE && c->waited >= CHAT_GRACE)
			kill(-c->pid, SIGTERM);
		else if (before < CHAT_GRACE + CHAT_KILL_AFTER && c->waited >= CHAT_GRACE + CHAT_KILL_AFTER)
			kill(-c->pid, SIGKILL);
		return;
	}
	ev_timer_stop(loop, w);
	chat_drain_agent(c);
	ev_break(loop, EVBREAK_ALL);
}

/* Ends the chat: stops reading the person, closes the agent's stdin and waits for it. */
static void
chat_quit(struct chat *c)
{
	if (c->quitting)
		return;
	c->quitting = 1;
	chat_input_stop(&c->in);
	if (!c->editing)
		chat_term_restore(&c->term);
	c->in.keys = 0;
	if (c->to_open) {
		wq_flush_blocking(&c->to_agent, 1000);
		wq_free(&c->to_agent);
		close(c->to_agent.fd);
		c->to_open = 0;
	}
	ev_timer_init(&c->reap, chat_reap_cb, 0., CHAT_REAP_TICK);
	c->reap.data = c;
	ev_timer_start(c->loop, &c->reap);
}

/* Starts the agent on two pipes; -1 (said on stderr) when it cannot. */
static int
chat_spawn(struct chat *c)
{
	int to[2], from[2], why;
	struct spawn_opts so;
	enum spawn_stage stage;

	if (pipe2(to, O_CLOEXEC) < 0)
		goto fail;
	if (pipe2(from, O_CLOEXEC) < 0) {
		close(to[0]);
		close(to[1]);
		goto fail;
	}
	memset(&so, 0, sizeof(so));
	so.path = "/proc/self/exe";	/* this very program, whatever its name or place */
	so.argv = c->o->agent_argv;
	so.envp = environ;
	so.fd[0] = to[0];
	so.fd[1] = from[1];
	so.fd[2] = STDERR_FILENO;
	c->pid = spawn_start(&so, &stage, &why);
	close(to[0]);
	close(from[1]);
	if (c->pid < 0) {
		close(to[1]);
		close(from[0]);
		c->pid = 0;
		errno = why;
		goto fail;
	}
	fcntl(to[1], F_SETFL, fcntl(to[1], F_GETFL) | O_NONBLOCK);
	fcntl(from[0], F_SETFL, fcntl(from[0], F_GETFL) | O_NONBLOCK);
	wq_init(&c->to_agent, c->loop, to[1]);
	c->to_agent.on_error = chat_agent_write_error;
	c->to_agent.arg = c;
	c->to_open = 1;
	reader_init(&c->from_agent, c->loop, from[0], chat_agent_line, chat_agent_overlong, chat_agent_eof, c);
	c->from_open = 1;
	return 0;
fail:
	fprintf(stderr, CHAT_E_PREFIX CHAT_E_SPAWN "\n", strerror(errno));
	return -1;
}

/* The exit status once the agent is reaped. */
static int
chat_status(struct chat *c)
{
	char how[64];

	if (!c->gone)
		return c->exit_code;
	if (WIFEXITED(c->status) && WEXITSTATUS(c->status) != 0 && !c->ready)
		return WEXITSTATUS(c->status);	/* it said why on stderr (a bad option: 2) */
	if (WIFSIGNALED(c->status))
		snprintf(how, sizeof(how), "signal %d", WTERMSIG(c->status));
	else
		snprintf(how, sizeof(how), "exit status %d", WEXITSTATUS(c->status));
	fprintf(stderr, CHAT_E_PREFIX CHAT_E_AGENT_GONE "\n", how);
	return 1;
}

static void
chat_signals(struct chat *c)
{
	ev_signal_init(&c->sigint, chat_sigint_cb, SIGINT);
	ev_signal_init(&c->sigterm, chat_sigstop_cb, SIGTERM);
	ev_signal_init(&c->sighup, chat_sigstop_cb, SIGHUP);
	ev_signal_init(&c->sigquit, chat_sigstop_cb, SIGQUIT);
	ev_signal_init(&c->sigwinch, chat_sigwinch_cb, SIGWINCH);
	c->sigint.data = c->sigterm.data = c->sighup.data = c->sigquit.data = c->sigwinch.data = c;
	ev_signal_start(c->loop, &c->sigint);
	ev_signal_start(c->loop, &c->sigterm);
	ev_signal_start(c->loop, &c->sighup);
	ev_signal_start(c->loop, &c->sigquit);
	ev_signal_start(c->loop, &c->sigwinch);
	for (int i = 0; i < 5; i++)
		ev_unref(c->loop);
	if (c->editing) {
		ev_signal_init(&c->sigtstp, chat_sigtstp_cb, SIGTSTP);
		ev_signal_init(&c->sigcont, chat_sigcont_cb, SIGCONT);
		c->sigtstp.data = c->sigcont.data = c;
		ev_signal_start(c->loop, &c->sigtstp);
		ev_signal_start(c->loop, &c->sigcont);
		ev_unref(c->loop);
		ev_unref(c->loop);
	}
}

static void
chat_unsignals(struct chat *c)
{
	for (int i = 0; i < 5; i++)
		ev_ref(c->loop);
	if (c->editing) {
		ev_ref(c->loop);
		ev_ref(c->loop);
		ev_signal_stop(c->loop, &c->sigtstp);
		ev_signal_stop(c->loop, &c->sigcont);
	}
	ev_signal_stop(c->loop, &c->sigquit);
	ev_signal_stop(c->loop, &c->sigwinch);
	ev_signal_stop(c->loop, &c->sigint);
	ev_signal_stop(c->loop, &c->sigterm);
	ev_signal_stop(c->loop, &c->sighup);
}

int
chat_client_run(const struct chat_opts *o)
{
	struct chat c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.o = o;
	c.loop = ev_loop_new(EVFLAG_AUTO);
	c.lines = json_array();
	c.asks = json_array();
	c.attach = json_array();
	buf_init(&c.screen);
	chat_term_init(&c.term);
	chat_render_init(&c.render, c.term.tty_out);
	chat_children_init(&c.kids, c.term.tty_out);
	if (chat_spawn(&c) < 0) {
		rc = 1;
		goto out;
	}
	ev_prepare_init(&c.flush, chat_flush_cb);
	c.flush.data = &c;
	ev_prepare_start(c.loop, &c.flush);
	ev_unref(c.loop);
	chat_input_init(&c.in, c.loop, STDIN_FILENO, chat_on_line, chat_on_key, chat_on_eof, &c);
	chat_bottom_init(&c.bottom);
	if (c.term.tty_in && c.term.tty_out && !o->list) {
		/* a person at a terminal: lines through the editor, the history under the state dir */
		char *hist = o->state_dir ? xasprintf("%s/chat_history", o->state_dir) : NULL;
		struct err e;
		err_clear(&e);
		if (chat_edit_init(&c.ed, hist, chat_on_edit_line, chat_on_eof, &c, &e) == 0) {
			c.editing = 1;
			c.in.ed = &c.ed;
		} else {
			fprintf(stderr, CHAT_E_PREFIX CHAT_E_NO_EDIT "\n", e.msg);
		}
		free(hist);
	}
	chat_signals(&c);	/* after the editor: Ctrl-Z and fg are handled only with it */
	/* The client asks for nothing it cannot answer: no fs, no terminal. */
	/* Children come as sessions of their own (docs/contract.md §22): each shown under its label. */
	c.init_id = chat_request_new(&c, "initialize", xjson_pack("{s:i, s:{s:{s:b, s:b}, s:b, s:{}}, s:{s:s, s:s}}",
	    "protocolVersion", 1, "clientCapabilities", "fs", "readTextFile", 0, "writeTextFile", 0,
	    "terminal", 0, "subagents", "clientInfo", "name", "acp-agent chat", "version", "1"));
	ev_run(c.loop, 0);
	/* Out of the loop only once the agent is reaped. */
	chat_render_break(&c.render, &c.screen);
	if (c.session && !c.gone && c.exit_code == 0) {
		char *opts = chat_resume_options(o->agent_argv);
		chat_render_note(&c.render, &c.screen, CHAT_RESUME_LINE, opts, c.session);
		free(opts);
	}
	chat_flush_screen(&c);
	chat_edit_free(&c.ed);		/* the terminal as it was: after the last of the screen */
	chat_bottom_free(&c.bottom);
	rc = chat_status(&c);
	ev_ref(c.loop);
	ev_prepare_stop(c.loop, &c.flush);
	chat_unsignals(&c);
	chat_input_free(&c.in);
	reader_free(&c.from_agent);
	close(c.from_agent.fd);
out:
	chat_term_restore(&c.term);
	chat_render_free(&c.render);
	chat_children_free(&c.kids);
	buf_free(&c.screen);
	json_decref(c.lines);
	json_decref(c.asks);
	json_decref(c.attach);
	json_decref(c.config);
	free(c.list_cursor);
	free(c.session);
	ev_loop_destroy(c.loop);
	return rc;
}
