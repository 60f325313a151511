/* The shapes of lines the full check accepted (checked.h). */
#include "session/checked.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

void
sess_checked_init(struct sess_checked *c)
{
	memset(c, 0, sizeof(*c));
	c->seq = -1;
	c->last = -1;
}

void
sess_checked_free(struct sess_checked *c)
{
	for (int i = 0; i < c->n; i++)
		json_shape_free(&c->s[i].sh);
	sess_checked_init(c);
}

int
sess_plain_int(const char *s, size_t n, int64_t *out)
{
	int64_t x = 0;

	if (n == 0 || n > 18)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		x = x * 10 + (s[i] - '0');
	}
	*out = x;
	return 1;
}

/* A plain number's value (jsonscan's plain: at most 18 digits), or INT64_MAX when it is not one. */
static int64_t
checked_plain_value(const char *s, size_t n)
{
	int64_t x;

	return sess_plain_int(s, n, &x) ? x : INT64_MAX;
}

void
sess_seq_text_next(char *text, size_t *len, size_t cap)
{
	size_t i = *len;

	while (i > 0 && text[i - 1] == '9')
		text[--i] = '0';
	if (i > 0) {
		text[i - 1]++;
	} else if (*len + 1 < cap) {
		memmove(text + 1, text, *len);
		text[0] = '1';
		text[++*len] = '\0';
	}
}

/* Whether the value at off is that of a key whose bytes end with `type` (white space allowed
 * around the colon). Keys hold no escapes here: the learner refuses shapes whose keys do. */
static size_t
checked_ws_back(const char *b, size_t k)
{
	while (k > 0 && (b[k - 1] == ' ' || b[k - 1] == '\t' || b[k - 1] == '\r' || b[k - 1] == '\n'))
		k--;
	return k;
}

static int
checked_after_type_key(const char *b, size_t off)
{
	size_t k = checked_ws_back(b, off);

	if (k == 0 || b[--k] != ':')
		return 0;
	k = checked_ws_back(b, k);
	return k >= 5 && memcmp(b + k - 5, "type\"", 5) == 0;
}

int
sess_checked_learn(struct sess_checked *c, const char *line, size_t n, int code, int level)
{
	struct sess_checked_shape cs;
	size_t lp = 0;

	memset(&cs, 0, sizeof(cs));
	if (!json_shape_learn(&cs.sh, line, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL))
		return 0;
	if (code <= 0 || cs.sh.bytes == NULL)
		goto refuse;
	/* The writer's envelope: the seq first, so value 0 is it. */
	if (cs.sh.nvar < 3 || cs.sh.len < 7 || memcmp(cs.sh.bytes, "{\"seq\":", 7) != 0 || cs.sh.var[0].off != 7 ||
	    cs.sh.var[0].kind != JSON_SHAPE_NUMBER)
		goto refuse;
	for (unsigned i = 0; i <= cs.sh.nvar; i++) {
		size_t off = i < cs.sh.nvar ? cs.sh.var[i].off : cs.sh.len;
		/* Between values there are only keys and punctuation: an escape there is in a key,
		 * which a byte compare would not see through. */
		if (memchr(cs.sh.bytes + lp, '\\', off - lp) != NULL)
			goto refuse;
		if (i == cs.sh.nvar)
			break;
		const char *v = cs.sh.bytes + off;
		if (cs.sh.var[i].kind == JSON_SHAPE_STRING && checked_after_type_key(cs.sh.bytes, off))
			cs.same |= 1ull << i;
		else if (cs.sh.var[i].kind == JSON_SHAPE_NUMBER && cs.sh.var[i].plain &&
		    checked_plain_value(v, cs.sh.var[i].len) >= INT_MAX)
			cs.unbounded |= 1ull << i;	/* a count cannot be that: the field is no count */
		lp = off + cs.sh.var[i].len;
	}
	/* The envelope: seq, time, then the event type (the value the envelope's check compares). */
	size_t t_end = cs.sh.var[1].off + cs.sh.var[1].len;
	if (cs.sh.var[1].kind != JSON_SHAPE_NUMBER || cs.sh.var[1].off != cs.sh.var[0].len + 7 + 8 ||
	    memcmp(cs.sh.bytes + 7 + cs.sh.var[0].len, ",\"time\":", 8) != 0 || cs.sh.var[2].off != t_end + 8 ||
	    memcmp(cs.sh.bytes + t_end, ",\"type\":", 8) != 0 || cs.sh.var[2].kind != JSON_SHAPE_STRING)
		goto refuse;
	cs.unbounded |= 1ull << 1;	/* the envelope's time is any integer (milliseconds since 1970) */
	cs.code = code;
	cs.level = level;
	int i = c->n < SESS_CHECKED_SHAPES ? c->n++ : c->victim++ % SESS_CHECKED_SHAPES;
	json_shape_free(&c->s[i].sh);
	c->s[i] = cs;
	c->next[i] = i;
	for (int k = 0; k < c->n; k++)
		if (c->next[k] == i && k != i)
			c->next[k] = k;	/* it was another shape before */
	c->last = i;
	return 1;
refuse:
	json_shape_free(&cs.sh);
	return 1;
}

/* The values of line as shape cs has them, checked at level as checked.h says. */
static int
checked_values_ok(const struct sess_checked_shape *cs, const struct json_span *v, const struct sess_checked *c,
    int level)
{
	const struct json_shape *sh = &cs->sh;

	if (v[0].n != c->textlen || memcmp(v[0].s, c->text, c->textlen) != 0 || !v[1].plain)
		return 0;
	for (unsigned i = 2; i < sh->nvar; i++) {
		if (cs->same & (1ull << i)) {
			if (v[i].n != sh->var[i].len || memcmp(v[i].s, sh->bytes + sh->var[i].off, v[i].n) != 0)
				return 0;
		} else if (sh->var[i].kind == JSON_SHAPE_NUMBER) {
			if (!v[i].plain)
				return 0;
			if (!(cs->unbounded & (1ull << i)) && checked_plain_value(v[i].s, v[i].n) >= INT_MAX)
				return 0;
		}
		if (level == SESS_CHECK_ENVELOPE)
			break;	/* the envelope asks only that the event type is the learnt one */
	}
	return 1;
}

const char *
sess_checked_match(struct sess_checked *c, const char *line, const char *limit, int64_t seq, int level, int *code)
{
	struct json_span v[JSON_SHAPE_MAX_VARS];

	if (c->n == 0)
		return NULL;
	if (seq == c->seq + 1 && c->seq >= 0) {	/* the usual case: one more than the last line's */
		sess_seq_text_next(c->text, &c->textlen, sizeof(c->text));
		c->seq = seq;
	} else if (seq != c->seq) {
		c->textlen = (size_t)snprintf(c->text, sizeof(c->text), "%lld", (long long)seq);
		c->seq = seq;
	}
	int first = c->last >= 0 ? c->next[c->last] : 0;
	for (int k = 0; k < c->n; k++) {
		int i = k == 0 ? first : (k <= first ? k - 1 : k);	/* the likely one, then the others */
		const struct sess_checked_shape *cs = &c->s[i];
		if (cs->level < level)
			continue;
		unsigned nv = level == SESS_CHECK_ENVELOPE ? 3 : cs->sh.nvar;
		const char *end = json_shape_match(&cs->sh, line, limit, v, nv);
		if (end == NULL || end >= limit || *end != '\n' || !checked_values_ok(cs, v, c, level))
			continue;
		if (c->last >= 0)
			c->next[c->last] = i;
		c->last = i;
		*code = cs->code;
		return end;
	}
	c->last = -1;
	return NULL;
}
