/* UTF-8 per RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF. */
#include "base/utf8.h"

#include <stdint.h>
#include <string.h>

#include "base/buf.h"

size_t
utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned min;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0) {
		len = 2;
		min = 0x80;
		cp = c & 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3;
		min = 0x800;
		cp = c & 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4;
		min = 0x10000;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

int
utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		uint64_t w;
		/* ASCII goes eight bytes at a time. */
		if (i + 8 <= n && (memcpy(&w, p + i, 8), (w & 0x8080808080808080ULL) == 0)) {
			i += 8;
			continue;
		}
		size_t l = utf8_seq_len(p + i, n - i);
		if (l == 0)
			return 0;
		i += l;
	}
	return 1;
}

char *
utf8_repair(const char *s, size_t n, size_t *out_len)
{
	const unsigned char *p = (const unsigned char *)s;
	struct buf b;
	size_t i = 0;

	buf_init(&b);
	buf_reserve(&b, n);
	while (i < n) {
		size_t l = utf8_seq_len(p + i, n - i);
		if (l == 0) {
			buf_append(&b, "\xef\xbf\xbd", 3);
			i++;
		} else {
			buf_append(&b, p + i, l);
			i += l;
		}
	}
	if (out_len)
		*out_len = b.len;
	return buf_steal(&b);
}

size_t
utf8_boundary(const char *s, size_t n, size_t max)
{
	size_t cut;

	if (n <= max)
		return n;
	cut = max;
	while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
		cut--;
	if (cut == 0) {
		/* One sequence longer than max: take it whole rather than split it. */
		cut = 1;
		while (cut < n && ((unsigned char)s[cut] & 0xc0) == 0x80)
			cut++;
	}
	return cut;
}
