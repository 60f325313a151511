/* A Markdown file's front matter (frontmatter.h). */
#include "base/frontmatter.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"

/* One line of the block: s[0..n), without its newline or a \r before it. */
struct fm_line {
	const char *s;
	size_t n;
	int no;
};

static int
fm_fail(char *why, size_t size, int line, const char *fmt, ...)
{
	va_list ap;
	int k = snprintf(why, size, "line %d: ", line);

	va_start(ap, fmt);
	if (k >= 0 && (size_t)k < size)
		vsnprintf(why + k, size - (size_t)k, fmt, ap);
	va_end(ap);
	return -1;
}

/* The next line of text from *pos (to *end); 0 at the end. */
static int
fm_next(const char *text, size_t len, size_t *pos, struct fm_line *l)
{
	const char *nl;

	if (*pos >= len)
		return 0;
	l->s = text + *pos;
	nl = memchr(l->s, '\n', len - *pos);
	l->n = nl ? (size_t)(nl - l->s) : len - *pos;
	*pos += l->n + (nl != NULL);
	if (l->n && l->s[l->n - 1] == '\r')
		l->n--;
	l->no++;
	return 1;
}

static int
fm_is_delim(const struct fm_line *l)
{
	size_t n = l->n;

	while (n > 3 && (l->s[n - 1] == ' ' || l->s[n - 1] == '\t'))
		n--;
	return n == 3 && memcmp(l->s, "---", 3) == 0;
}

static void
fm_trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*n)--;
	}
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* A scalar: quoted or plain, into a new string; NULL with why. A plain value ends before " #". */
static json_t *
fm_scalar(const char *s, size_t n, int line, char *why, size_t size)
{
	struct buf b;
	json_t *v;

	fm_trim(&s, &n);
	buf_init(&b);
	if (n && (s[0] == '"' || s[0] == '\'')) {
		char q = s[0];
		size_t i = 1;
		for (; i < n; i++) {
			if (s[i] == q && q == '\'' && i + 1 < n && s[i + 1] == '\'') {
				buf_append(&b, "'", 1);
				i++;
			} else if (s[i] == q) {
				break;
			} else if (s[i] == '\\' && q == '"' && i + 1 < n) {
				char c = s[++i];
				const char *r = c == 'n' ? "\n" : c == 't' ? "\t" : c == '"' ? "\"" : c == '\\' ? "\\" : NULL;
				if (r == NULL) {
					buf_free(&b);
					if (c > 0x20 && c < 0x7f)
						fm_fail(why, size, line, "unknown escape \\%c in a quoted value", c);
					else
						fm_fail(why, size, line, "unknown escape \\ then byte 0x%02x in a quoted value",
						    (unsigned char)c);
					return NULL;
				}
				buf_append(&b, r, 1);
			} else {
				buf_append(&b, s + i, 1);
			}
		}
		if (i >= n) {
			buf_free(&b);
			fm_fail(why, size, line, "a quoted value is not closed");
			return NULL;
		}
		const char *rest = s + i + 1;
		size_t rn = n - i - 1;
		fm_trim(&rest, &rn);
		if (rn && rest[0] != '#') {
			buf_free(&b);
			fm_fail(why, size, line, "text after a quoted value");
			return NULL;
		}
	} else {
		for (size_t i = 0; i + 1 < n; i++)
			if ((s[i] == ' ' || s[i] == '\t') && s[i + 1] == '#') {
				n = i;	/* a comment */
				break;
			}
		fm_trim(&s, &n);
		if (n && (s[0] == '|' || s[0] == '>') && (n == 1 || s[1] == '-' || s[1] == '+')) {
			buf_free(&b);
			fm_fail(why, size, line, "block scalars (| or >) are not supported: write the value on one line");
			return NULL;
		}
		if (n && s[0] == '{') {
			buf_free(&b);
			fm_fail(why, size, line, "nested maps are not supported");
			return NULL;
		}
		buf_append(&b, s, n);
	}
	v = json_stringn(b.data ? b.data : "", b.len);
	buf_free(&b);
	if (v == NULL)
		fm_fail(why, size, line, "the value is not UTF-8");
	return v;
}

/* A [a, b] list into a new array; NULL with why. */
static json_t *
fm_flow(const char *s, size_t n, int line, char *why, size_t size)
{
	json_t *a = json_array();
	size_t i = 1, start;

	fm_trim(&s, &n);
	if (n < 2 || s[n - 1] != ']') {
		json_decref(a);
		fm_fail(why, size, line, "a [ list is not closed on its line");
		return NULL;
	}
	n--;	/* the ] */
	while (i < n) {
		int quoted = 0;
		start = i;
		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (i < n && (s[i] == '"' || s[i] == '\'')) {
			char q = s[i++];
			quoted = 1;
			while (i < n && (s[i] != q || (q == '\'' && i + 1 < n && s[i + 1] == '\''))) {
				if (s[i] == q)
					i++;	/* '' inside '…' is one quote */
				i += s[i] == '\\' && q == '"' ? 2 : 1;
			}
			i++;
		}
		while (i < n && s[i] != ',')
			i++;
		if (i > n)
			i = n;
		const char *item = s + start;
		size_t in = i - start;
		fm_trim(&item, &in);
		if (in == 0 && !quoted) {
			if (i < n || json_array_size(a) > 0) {
				json_decref(a);
				fm_fail(why, size, line, "an empty item in a [ list");
				return NULL;
			}
		} else {
			json_t *v = fm_scalar(item, in, line, why, size);
			if (v == NULL) {
				json_decref(a);
				return NULL;
			}
			json_array_append_new(a, v);
		}
		i++;	/* the comma */
	}
	return a;
}

/* A key with an empty value and no - items below it is an empty string. */
static void
fm_list_end(json_t *obj, json_t *list, const char *key)
{
	if (list && json_array_size(list) == 0)
		json_object_set_new(obj, key, json_string(""));
}

int
frontmatter_parse(const char *text, size_t len, json_t **fields, size_t *body, char *why, size_t whysize)
{
	struct fm_line l = { NULL, 0, 0 };
	size_t pos = 0;
	json_t *obj = json_object(), *list = NULL;
	char list_key[80] = "";		/* the key whose empty value list holds its - items */

	*fields = NULL;
	*body = 0;
	if (!fm_next(text, len, &pos, &l) || !fm_is_delim(&l)) {
		*fields = obj;		/* no front matter: all body */
		return 0;
	}
	for (;;) {
		if (!fm_next(text, len, &pos, &l)) {
			json_decref(obj);
			return fm_fail(why, whysize, l.no, "the front matter has no closing ---");
		}
		if (fm_is_delim(&l))
			break;
		const char *s = l.s;
		size_t n = l.n;
		fm_trim(&s, &n);
		if (n == 0 || s[0] == '#')
			continue;
		if (s[0] == '-' && (n == 1 || s[1] == ' ' || s[1] == '\t')) {
			if (list == NULL) {
				json_decref(obj);
				return fm_fail(why, whysize, l.no, "a - item that follows no key");
			}
			json_t *v = fm_scalar(s + 1, n - 1, l.no, why, whysize);
			if (v == NULL) {
				json_decref(obj);
				return -1;
			}
			json_array_append_new(list, v);
			continue;
		}
		fm_list_end(obj, list, list_key);
		list = NULL;
		if (l.s[0] == ' ' || l.s[0] == '\t') {
			json_decref(obj);
			return fm_fail(why, whysize, l.no, "an indented line (continuations and nested keys are not supported)");
		}
		size_t k = 0;
		while (k < n && (s[k] == '_' || s[k] == '-' || (s[k] >= 'a' && s[k] <= 'z') || (s[k] >= 'A' && s[k] <= 'Z') ||
		    (k > 0 && s[k] >= '0' && s[k] <= '9')))
			k++;
		if (k == 0 || k >= n || s[k] != ':' || (k + 1 < n && s[k + 1] != ' ' && s[k + 1] != '\t')) {
			json_decref(obj);
			return fm_fail(why, whysize, l.no, "not a key: value line");
		}
		char key[80];
		if (k >= sizeof(key)) {
			json_decref(obj);
			return fm_fail(why, whysize, l.no, "a key longer than %zu characters", sizeof(key) - 1);
		}
		memcpy(key, s, k);
		key[k] = '\0';
		if (json_object_get(obj, key)) {
			json_decref(obj);
			return fm_fail(why, whysize, l.no, "the key %s is given twice", key);
		}
		const char *v = s + k + 1;
		size_t vn = n - k - 1;
		fm_trim(&v, &vn);
		json_t *val;
		if (vn == 0 || v[0] == '#') {
			/* empty: a list of - items may follow (with none, an empty string: below) */
			val = json_array();
			list = val;
			memcpy(list_key, key, k + 1);
		} else if (v[0] == '[') {
			val = fm_flow(v, vn, l.no, why, whysize);
		} else {
			val = fm_scalar(v, vn, l.no, why, whysize);
		}
		if (val == NULL) {
			json_decref(obj);
			return -1;
		}
		json_object_set_new(obj, key, val);
	}
	fm_list_end(obj, list, list_key);
	*fields = obj;
	*body = pos;
	return 0;
}
