/* The children of the chat's session (children.h). */
#include "chat/children.h"

#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "chat/texts.h"

struct chat_child {
	char *label;		/* owned */
	struct chat_render r;	/* its stream's renderer */
	struct buf text;	/* what r rendered, its last line not complete yet */
};

void
chat_children_init(struct chat_children *k, int tty)
{
	map_init(&k->by_id);
	k->tty = tty;
}

void
chat_children_free(struct chat_children *k)
{
	size_t pos = 0;
	const char *key;
	void *v;

	while (map_next(&k->by_id, &pos, &key, &v)) {
		struct chat_child *ch = v;
		chat_render_free(&ch->r);
		buf_free(&ch->text);
		free(ch->label);
		free(ch);
	}
	map_free(&k->by_id);
}

/* Writes the complete lines ch rendered (all of it with flush), each after its label. */
static void
chat_child_emit(struct chat_child *ch, struct chat_render *root, struct buf *out, int flush)
{
	size_t pos = 0;

	while (pos < ch->text.len) {
		const char *nl = memchr(ch->text.data + pos, '\n', ch->text.len - pos);
		size_t end = nl ? (size_t)(nl - ch->text.data) : ch->text.len;
		if (nl == NULL && !flush)
			break;
		char *prefix = xasprintf(CHAT_CHILD_LINE, ch->label);
		chat_render_aside(root, out, prefix, ch->text.data + pos, end - pos);
		free(prefix);
		pos = end + (nl != NULL);
	}
	if (pos > 0) {
		memmove(ch->text.data, ch->text.data + pos, ch->text.len - pos);
		ch->text.len -= pos;
	}
	if (flush) {
		chat_render_break(&ch->r, &ch->text);	/* its renderer starts on a fresh line */
		ch->text.len = 0;
	}
}

/* A subagent_update: a child announced (or its title changed), its state as one line. */
static void
chat_child_state(struct chat_children *k, struct chat_render *root, const json_t *u, struct buf *out)
{
	const char *id = json_string_value(json_object_get(u, "sessionId"));
	const char *title = json_string_value(json_object_get(u, "title"));
	const json_t *st = json_object_get(u, "state");
	const char *state = json_string_value(json_object_get(st, "state"));
	struct chat_child *ch;

	if (id == NULL)
		return;
	if ((ch = map_get(&k->by_id, id)) == NULL) {
		ch = xcalloc(1, sizeof(*ch));
		ch->label = xstrdup(title && *title ? title : id);
		chat_render_init(&ch->r, k->tty);
		buf_init(&ch->text);
		map_put(&k->by_id, id, ch);
	} else if (title && *title && strcmp(title, ch->label) != 0) {
		free(ch->label);
		ch->label = xstrdup(title);
	}
	if (state == NULL)
		return;
	if (strcmp(state, "idle") == 0) {
		const char *stop = json_string_value(json_object_get(st, "stopReason"));
		const char *msg = json_string_value(json_object_get(json_object_get(st, "error"), "message"));
		chat_child_emit(ch, root, out, 1);
		if (stop == NULL || strcmp(stop, "end_turn") == 0)
			chat_render_note(root, out, CHAT_CHILD_DONE, ch->label);
		else
			chat_render_note(root, out, CHAT_CHILD_STOPPED, ch->label, msg ? msg : stop);
	} else if (strcmp(state, "requires_action") == 0) {
		chat_render_note(root, out, CHAT_CHILD_ASKING, ch->label);
	} else if (strcmp(state, "running") == 0) {
		chat_render_note(root, out, CHAT_CHILD_RUNNING, ch->label);
	}
}

/* The label of session id for a message line: a child's, the root's, or the id. */
static const char *
chat_child_label(struct chat_children *k, const char *root_sid, const char *id)
{
	struct chat_child *ch;

	if (id == NULL)
		return "?";
	if (root_sid && strcmp(id, root_sid) == 0)
		return CHAT_ROOT_LABEL;
	ch = map_get(&k->by_id, id);
	return ch ? ch->label : id;
}

/* A session_message: shown once, on the session that received it, each text line after who sent
 * it to whom (the outgoing view on the sender's session says the same: not shown). */
static void
chat_child_message(struct chat_children *k, struct chat_render *root, const char *root_sid, const char *sid,
    const json_t *u, struct buf *out)
{
	const char *to = json_string_value(json_object_get(u, "recipientSessionId"));
	const json_t *blk;
	size_t i;
	char *prefix;

	if (to == NULL || sid == NULL || strcmp(to, sid) != 0)
		return;
	prefix = xasprintf(CHAT_CHILD_MESSAGE, chat_child_label(k, root_sid,
	    json_string_value(json_object_get(u, "senderSessionId"))), chat_child_label(k, root_sid, to));
	json_array_foreach(json_object_get(u, "content"), i, blk) {
		const char *text = json_string_value(json_object_get(blk, "text"));
		for (const char *p = text; p && *p;) {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			struct buf safe;
			buf_init(&safe);
			chat_safe_append(&safe, p, n);	/* an agent's words: shown, never acted on */
			chat_render_aside(root, out, prefix, safe.data ? safe.data : "", safe.len);
			buf_free(&safe);
			p += n + (nl != NULL);
		}
	}
	free(prefix);
}

int
chat_children_update(struct chat_children *k, struct chat_render *root, const char *root_sid, const char *sid,
    const json_t *update, struct buf *out)
{
	const char *kind = json_string_value(json_object_get(update, "sessionUpdate"));
	int of_root = sid == NULL || root_sid == NULL || strcmp(sid, root_sid) == 0;
	struct chat_child *ch = of_root ? NULL : map_get(&k->by_id, sid);

	if (!of_root && ch == NULL)
		return 1;	/* a session this chat was not told of: not its to show */
	if (kind && strcmp(kind, "subagent_update") == 0) {
		chat_child_state(k, root, update, out);
		return 1;
	}
	if (kind && strcmp(kind, "session_message") == 0) {
		if (ch)
			chat_child_emit(ch, root, out, 1);	/* what it showed before comes first */
		chat_child_message(k, root, root_sid, sid, update, out);
		return 1;
	}
	if (of_root)
		return 0;
	chat_render_update(&ch->r, update, &ch->text);
	chat_child_emit(ch, root, out, 0);
	return 1;
}

int
chat_children_ask(struct chat_children *k, struct chat_render *root, const json_t *params, struct buf *out)
{
	const char *sid = json_string_value(json_object_get(params, "sessionId"));
	struct chat_child *ch = sid ? map_get(&k->by_id, sid) : NULL;
	struct buf ask;

	if (ch == NULL)
		return 0;
	chat_child_emit(ch, root, out, 1);	/* what it showed before comes first */
	buf_init(&ask);
	chat_render_ask(&ch->r, params, ch->label, &ask);
	if (ask.len > 0 && ask.data[ask.len - 1] == '\n')
		ask.len--;
	chat_render_aside(root, out, "", ask.data ? ask.data : "", ask.len);
	buf_free(&ask);
	return 1;
}

