/*
 * recording.json (docs/contract.md §21, §7.2): each reply lands in its agent's script at its position, so a
 * replay hands every agent the reply it got, whatever the order the agents asked in.
 */
#include "record/internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

/* The text of recording.json: one reply per line. Returns owned. */
static char *
record_recording_text(const struct record *r)
{
	const json_t *scripts = json_object_get(r->recording, "scripts");
	const json_t *model = json_object_get(r->recording, "model");
	struct buf b;
	size_t i;
	json_t *sc;

	buf_init(&b);
	buf_puts(&b, "{\"version\": 1,");
	if (model) {
		char *m = json_dumps(model, JSON_ENCODE_ANY);
		buf_printf(&b, " \"model\": %s,", m);
		free(m);
	}
	buf_puts(&b, " \"scripts\": [");
	json_array_foreach(scripts, i, sc) {
		char *agent = json_dumps(json_object_get(sc, "agent"), JSON_ENCODE_ANY);
		buf_printf(&b, "%s\n {\"agent\": %s", i ? "," : "", agent);
		free(agent);
		static const char *const lists[] = { "replies", "compactions" };
		for (size_t l = 0; l < 2; l++) {
			const json_t *arr = json_object_get(sc, lists[l]);
			size_t k;
			json_t *reply;
			if (arr == NULL)
				continue;
			buf_printf(&b, ", \"%s\": [", lists[l]);
			json_array_foreach(arr, k, reply) {
				char *t = json_dumps(reply, 0);
				buf_printf(&b, "%s\n  %s", k ? "," : "", t);
				free(t);
			}
			buf_puts(&b, "]");
		}
		buf_puts(&b, "}");
	}
	buf_puts(&b, "]}\n");
	return buf_steal(&b);
}

int
record_write_recording(struct record *r)
{
	char *text = record_recording_text(r);
	int rc = record_write(r, "recording.json", text, strlen(text), 0644);

	free(text);
	return rc;
}

/* The ordinal-th script of key, made (with empty ones before it) when missing; borrowed. */
static json_t *
record_script(struct record *r, const char *key, size_t ordinal)
{
	json_t *scripts = json_object_get(r->recording, "scripts"), *sc = NULL;
	size_t seen = 0, i;

	json_array_foreach(scripts, i, sc) {
		if (strcmp(json_string_value(json_object_get(sc, "agent")), key) == 0 && seen++ == ordinal)
			return sc;
	}
	for (; seen <= ordinal; seen++) {
		sc = xjson_pack("{s:s, s:[]}", "agent", key, "replies");
		json_array_append_new(scripts, sc);
	}
	return sc;
}

/* Replaces whole occurrences of ids in s by their placeholders (pairs: id, placeholder). */
static char *
record_ids(const char *s, const char *const *pairs, size_t npairs)
{
	struct buf b;

	buf_init(&b);
	while (*s) {
		size_t k;
		for (k = 0; k < npairs; k++)
			if (pairs[2 * k] && *pairs[2 * k] &&
			    strncmp(s, pairs[2 * k], strlen(pairs[2 * k])) == 0)
				break;
		if (k < npairs) {
			buf_puts(&b, pairs[2 * k + 1]);
			s += strlen(pairs[2 * k]);
		} else {
			buf_append(&b, s, 1);
			s++;
		}
	}
	return b.data ? buf_steal(&b) : xstrdup("");
}

/* A reply's templated strings: text and reasoning get the key blanked and {{cwd}}; tool
 * arguments also {{self}}, {{parent}} and {{agent:<label>}} for the children the replay
 * provider resolves (docs/contract.md §7.2). */
static json_t *
record_reply_templ(struct record *r, const struct record_reply *rr)
{
	struct record paths = { 0 };
	json_t *out = json_object(), *calls;
	const char *k;
	json_t *v;
	size_t npairs = 2, i;
	const char **pairs = xcalloc(2 * (2 + json_object_size(r->children)), sizeof(*pairs));
	char **owned = xcalloc(json_object_size(r->children) + 1, sizeof(*owned));
	size_t nowned = 0;

	/* Only what the replay provider fills: the key and the cwd (no state, no session ids). */
	paths.secret = r->secret;
	paths.cwd = r->cwd;
	pairs[0] = rr->agent_id, pairs[1] = "{{self}}";
	pairs[2] = rr->parent_id, pairs[3] = "{{parent}}";
	json_object_foreach(r->children, k, v) {
		const char *parent = json_string_value(json_object_get(v, "parent"));
		if (rr->agent_id == NULL || parent == NULL || strcmp(parent, rr->agent_id) != 0)
			continue;
		owned[nowned] = xasprintf("{{agent:%s}}", json_string_value(json_object_get(v, "label")));
		pairs[2 * npairs] = k;
		pairs[2 * npairs + 1] = owned[nowned++];
		npairs++;
	}
	json_object_foreach((json_t *)rr->reply, k, v) {
		if (strcmp(k, "tool_calls") != 0) {
			json_object_set_new(out, k, record_templ(&paths, v));
			continue;
		}
		calls = json_array();
		json_t *c;
		json_array_foreach(v, i, c) {
			json_t *nc = json_copy(c), *args = record_templ(&paths, json_object_get(c, "arguments"));
			char *text = json_is_string(args) ? xstrdup(json_string_value(args)) : json_dumps(args, JSON_COMPACT);
			char *filled = record_ids(text, pairs, npairs);
			json_t *back = json_is_string(args) ? NULL : json_loads(filled, 0, NULL);
			json_object_set_new(nc, "arguments", back ? back : json_string(filled));
			json_array_append_new(calls, nc);
			json_decref(args);
			free(text);
			free(filled);
		}
		json_object_set_new(out, k, calls);
	}
	for (i = 0; i < nowned; i++)
		free(owned[i]);
	free(owned);
	free(pairs);
	return out;
}

void
record_reply(struct record *r, const struct record_reply *rr)
{
	json_t *sc = record_script(r, rr->key, rr->ordinal);
	const char *list = rr->summary ? "compactions" : "replies";
	json_t *arr = json_object_get(sc, list);

	/* A child is known by its first reply: its parent's later replies name it by label. */
	if (rr->parent_id && rr->agent_id && strncmp(rr->key, "label:", 6) == 0 &&
	    !json_object_get(r->children, rr->agent_id))
		json_object_set_new(r->children, rr->agent_id, xjson_pack("{s:s, s:s}", "parent", rr->parent_id,
		    "label", rr->key + 6));
	if (arr == NULL) {
		arr = json_array();
		json_object_set_new(sc, list, arr);
	}
	/* A position never seen (a request this process did not make) keeps the replay honest. */
	while (json_array_size(arr) < rr->position)
		json_array_append_new(arr, xjson_pack("{s:{s:s, s:s}}", "error", "message",
		    "this request was not recorded", "code", "REPLAY_EXHAUSTED"));
	json_t *reply = record_reply_templ(r, rr);
	if (json_array_size(arr) == rr->position)
		json_array_append_new(arr, reply);
	else
		json_array_set_new(arr, rr->position, reply);
	record_write_recording(r);
}
