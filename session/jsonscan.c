/* Recursive-descent JSON validation over bytes, depth-limited, no allocation. */
#include "session/jsonscan.h"

#include "base/utf8.h"

#define SCAN_MAX_DEPTH 512

struct scan {
	const unsigned char *p, *end;
};

static void
scan_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static int scan_value(struct scan *s, int depth);

static int
scan_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int
scan_string(struct scan *s)
{
	s->p++;		/* the opening quote */
	while (s->p < s->end) {
		unsigned char c = *s->p;
		if (c == '"') {
			s->p++;
			return 1;
		}
		if (c < 0x20)
			return 0;
		if (c == '\\') {
			if (++s->p >= s->end)
				return 0;
			c = *s->p;
			if (c == 'u') {
				if (s->end - s->p < 5 || !scan_hex(s->p[1]) || !scan_hex(s->p[2]) || !scan_hex(s->p[3]) ||
				    !scan_hex(s->p[4]))
					return 0;
				s->p += 5;
				continue;
			}
			if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' && c != 'r' && c != 't')
				return 0;
			s->p++;
			continue;
		}
		if (c < 0x80) {
			s->p++;
			continue;
		}
		size_t l = utf8_seq_len(s->p, (size_t)(s->end - s->p));
		if (l == 0)
			return 0;
		s->p += l;
	}
	return 0;
}

static int
scan_digits(struct scan *s)
{
	const unsigned char *start = s->p;

	while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
		s->p++;
	return s->p > start;
}

static int
scan_number(struct scan *s)
{
	if (*s->p == '-')
		s->p++;
	if (s->p >= s->end)
		return 0;
	if (*s->p == '0')
		s->p++;
	else if (!scan_digits(s))
		return 0;
	if (s->p < s->end && *s->p == '.') {
		s->p++;
		if (!scan_digits(s))
			return 0;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (!scan_digits(s))
			return 0;
	}
	return 1;
}

static int
scan_word(struct scan *s, const char *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s->p + i >= s->end || s->p[i] != (unsigned char)w[i])
			return 0;
	s->p += n;
	return 1;
}

static int
scan_container(struct scan *s, int depth, unsigned char close)
{
	s->p++;
	scan_ws(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		return 1;
	}
	for (;;) {
		if (close == '}') {
			if (s->p >= s->end || *s->p != '"' || !scan_string(s))
				return 0;
			scan_ws(s);
			if (s->p >= s->end || *s->p != ':')
				return 0;
			s->p++;
			scan_ws(s);
		}
		if (!scan_value(s, depth + 1))
			return 0;
		scan_ws(s);
		if (s->p >= s->end)
			return 0;
		if (*s->p == close) {
			s->p++;
			return 1;
		}
		if (*s->p != ',')
			return 0;
		s->p++;
		scan_ws(s);
	}
}

static int
scan_value(struct scan *s, int depth)
{
	if (s->p >= s->end || depth > SCAN_MAX_DEPTH)
		return 0;
	switch (*s->p) {
	case '{':
		return scan_container(s, depth, '}');
	case '[':
		return scan_container(s, depth, ']');
	case '"':
		return scan_string(s);
	case 't':
		return scan_word(s, "true", 4);
	case 'f':
		return scan_word(s, "false", 5);
	case 'n':
		return scan_word(s, "null", 4);
	default:
		return (*s->p == '-' || (*s->p >= '0' && *s->p <= '9')) && scan_number(s);
	}
}

int
json_scan_valid(const char *str, size_t n)
{
	struct scan s = { (const unsigned char *)str, (const unsigned char *)str + n };

	scan_ws(&s);
	if (!scan_value(&s, 0))
		return 0;
	scan_ws(&s);
	return s.p == s.end;
}

const char *
json_scan_skip(const char *p, const char *end)
{
	struct scan s = { (const unsigned char *)p, (const unsigned char *)end };

	scan_ws(&s);
	if (!scan_value(&s, 0))
		return NULL;
	return (const char *)s.p;
}
