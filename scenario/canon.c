/* Normalisation for scenario snapshots (docs/contract.md §10.4). */
#include "scenario/canon.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xmalloc.h"

struct scenario_canon {
	json_t *ids;		/* uuid -> token */
	int next;
	const char *const *paths;
	const char *const *names;
	const regex_t *masks;	/* borrowed */
	size_t nmasks;
};

struct scenario_canon *
scenario_canon_new(const char *const *paths, const char *const *names)
{
	struct scenario_canon *c = xcalloc(1, sizeof(*c));

	c->ids = json_object();
	c->paths = paths;
	c->names = names;
	return c;
}

void
scenario_canon_free(struct scenario_canon *c)
{
	json_decref(c->ids);
	free(c);
}

void
scenario_canon_masks(struct scenario_canon *c, const regex_t *masks, size_t n)
{
	c->masks = masks;
	c->nmasks = n;
}

/* s with every match of c's masks replaced by <masked>; owned (s is freed). */
static char *
scenario_canon_mask(const struct scenario_canon *c, char *s)
{
	for (size_t k = 0; k < c->nmasks; k++) {
		struct buf b;
		const char *p = s;
		regmatch_t m;
		int eflags = 0;

		buf_init(&b);
		while (*p && regexec(&c->masks[k], p, 1, &m, eflags) == 0) {
			buf_append(&b, p, (size_t)m.rm_so);
			if (m.rm_eo == m.rm_so) {	/* an empty match masks nothing: step over a byte */
				buf_append(&b, p + m.rm_so, 1);
				p += m.rm_so + 1;
			} else {
				buf_puts(&b, "<masked>");
				p += m.rm_eo;
			}
			eflags = REG_NOTBOL;
		}
		buf_puts(&b, p);
		free(s);
		s = b.data ? buf_steal(&b) : xstrdup("");
	}
	return s;
}

static int
scenario_canon_hex(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

static int
scenario_canon_is_uuid(const char *s)
{
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!scenario_canon_hex(s[i])) {
			return 0;
		}
	}
	return 1;
}

/* Replaces every UUID and known path inside s; returns owned. */
static char *
scenario_canon_text(struct scenario_canon *c, const char *s)
{
	struct buf b;
	size_t len = strlen(s);

	buf_init(&b);
	for (size_t i = 0; i < len;) {
		int done = 0;
		for (int k = 0; c->paths && c->paths[k]; k++) {
			size_t pl = strlen(c->paths[k]);
			if (pl && strncmp(s + i, c->paths[k], pl) == 0) {
				buf_puts(&b, c->names[k]);
				i += pl;
				done = 1;
				break;
			}
		}
		if (done)
			continue;
		if (len - i >= 36 && scenario_canon_is_uuid(s + i) && (i == 0 || !scenario_canon_hex(s[i - 1])) &&
		    (i + 36 == len || !scenario_canon_hex(s[i + 36]))) {
			char id[37];
			memcpy(id, s + i, 36);
			id[36] = '\0';
			json_t *tok = json_object_get(c->ids, id);
			if (tok == NULL) {
				char *t = xasprintf("<ID-%d>", ++c->next);
				tok = json_string(t);
				free(t);
				json_object_set_new(c->ids, id, tok);
			}
			buf_puts(&b, json_string_value(tok));
			i += 36;
			continue;
		}
		buf_append(&b, s + i, 1);
		i++;
	}
	return buf_steal(&b);
}

static json_t *
scenario_canon_json(struct scenario_canon *c, json_t *v, const char *key)
{
	if (key && (strcmp(key, "time") == 0 || strcmp(key, "createdAt") == 0 ||
		       strcmp(key, "updatedAt") == 0) && (json_is_integer(v) || json_is_string(v)))
		return json_string("<time>");
	if (json_is_string(v)) {
		char *t = scenario_canon_mask(c, scenario_canon_text(c, json_string_value(v)));
		json_t *out = json_string(t);
		free(t);
		return out ? out : json_incref(v);
	}
	if (json_is_object(v)) {
		json_t *o = json_object();
		const char *k;
		json_t *x;
		int agent_info = key && strcmp(key, "agentInfo") == 0;
		json_object_foreach(v, k, x) {
			char *nk = scenario_canon_text(c, k);
			/* A version bump must not rewrite every snapshot. */
			if (agent_info && strcmp(k, "version") == 0 && json_is_string(x))
				json_object_set_new(o, nk, json_string("<version>"));
			else
				json_object_set_new(o, nk, scenario_canon_json(c, x, k));
			free(nk);
		}
		return o;
	}
	if (json_is_array(v)) {
		json_t *a = json_array();
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x) json_array_append_new(a, scenario_canon_json(c, x, NULL));
		return a;
	}
	return json_incref(v);
}

char *
scenario_canon_line(struct scenario_canon *c, const char *line)
{
	json_t *j = json_loads(line, JSON_ALLOW_NUL, NULL);
	json_t *n;
	char *out;

	if (j == NULL)
		return scenario_canon_text(c, line);
	n = scenario_canon_json(c, j, NULL);
	out = json_dumps(n, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(j);
	json_decref(n);
	return out;
}
