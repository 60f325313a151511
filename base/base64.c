/* Strict base64 (base/base64.h). */
#include "base/base64.h"

#include <stdint.h>

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* 0..63 for an alphabet byte, 64 for anything else ('=' included). */
static unsigned char
b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return (unsigned char)(c - 'A');
	if (c >= 'a' && c <= 'z')
		return (unsigned char)(c - 'a' + 26);
	if (c >= '0' && c <= '9')
		return (unsigned char)(c - '0' + 52);
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return 64;
}

long long
base64_decode(const char *s, size_t n, unsigned char *out, size_t *bad)
{
	const unsigned char *in = (const unsigned char *)s;
	unsigned char table[256];
	size_t i, o = 0;

	if (n % 4 != 0) {
		*bad = n;
		return -1;
	}
	for (i = 0; i < 256; i++)
		table[i] = b64_value((unsigned char)i);
	for (i = 0; i < n; i += 4) {
		unsigned a = table[in[i]], b = table[in[i + 1]], c = table[in[i + 2]], d = table[in[i + 3]];
		if ((a | b | c | d) < 64) {
			uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | d;
			out[o++] = (unsigned char)(v >> 16);
			out[o++] = (unsigned char)(v >> 8);
			out[o++] = (unsigned char)v;
			continue;
		}
		/* Only the last quantum may pad: "xx==" or "xxx=", with the unused bits zero. */
		int last = i + 4 == n, two = last && in[i + 2] == '=' && in[i + 3] == '=';
		size_t at;
		if (a >= 64) {
			at = i;
		} else if (b >= 64) {
			at = i + 1;
		} else if (c >= 64) {
			if (two && (b & 0x0f) == 0) {
				out[o++] = (unsigned char)(a << 2 | b >> 4);
				return (long long)o;
			}
			at = two ? i + 1 : i + 2;	/* padding bits set, or a '=' not at the end */
		} else if (last && in[i + 3] == '=' && (c & 0x03) == 0) {
			out[o++] = (unsigned char)(a << 2 | b >> 4);
			out[o++] = (unsigned char)((b & 0x0f) << 4 | c >> 2);
			return (long long)o;
		} else {
			at = last && in[i + 3] == '=' ? i + 2 : i + 3;
		}
		*bad = at;
		return -1;
	}
	return (long long)o;
}

size_t
base64_encode(const unsigned char *in, size_t n, char *out)
{
	size_t i, o = 0;

	for (i = 0; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = b64_alphabet[(v >> 6) & 63];
		out[o++] = b64_alphabet[v & 63];
	}
	if (n - i == 1) {
		out[o++] = b64_alphabet[in[i] >> 2];
		out[o++] = b64_alphabet[(in[i] & 3) << 4];
		out[o++] = '=';
		out[o++] = '=';
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)in[i] << 8 | in[i + 1];
		out[o++] = b64_alphabet[v >> 10];
		out[o++] = b64_alphabet[(v >> 4) & 63];
		out[o++] = b64_alphabet[(v & 15) << 2];
		out[o++] = '=';
	}
	return o;
}
