/* Image types by their first bytes (base/imgtype.h). */
#include "base/imgtype.h"

#include <string.h>

static const struct {
	const char *mime;
	const char *magic;
	size_t at, len;
} imgtypes[] = {
	{ "image/png", "\x89PNG\r\n\x1a\n", 0, 8 },
	{ "image/jpeg", "\xff\xd8\xff", 0, 3 },
	{ "image/gif", "GIF8", 0, 4 },
	{ "image/webp", "WEBP", 8, 4 },
};
#define IMGTYPES (sizeof(imgtypes) / sizeof(imgtypes[0]))

int
imgtype_known(const char *mime)
{
	for (size_t i = 0; mime && i < IMGTYPES; i++)
		if (strcmp(mime, imgtypes[i].mime) == 0)
			return 1;
	return 0;
}

static int
imgtype_at(size_t t, const unsigned char *d, size_t n)
{
	if (n < imgtypes[t].at + imgtypes[t].len || memcmp(d + imgtypes[t].at, imgtypes[t].magic, imgtypes[t].len) != 0)
		return 0;
	if (strcmp(imgtypes[t].mime, "image/gif") == 0)
		return n >= 6 && (d[4] == '7' || d[4] == '9') && d[5] == 'a';
	if (strcmp(imgtypes[t].mime, "image/webp") == 0)
		return memcmp(d, "RIFF", 4) == 0;
	return 1;
}

int
imgtype_matches(const char *mime, const unsigned char *d, size_t n)
{
	for (size_t i = 0; mime && i < IMGTYPES; i++)
		if (strcmp(mime, imgtypes[i].mime) == 0)
			return imgtype_at(i, d, n);
	return 0;
}

const char *
imgtype_of(const unsigned char *d, size_t n)
{
	for (size_t i = 0; i < IMGTYPES; i++)
		if (imgtype_at(i, d, n))
			return imgtypes[i].mime;
	return NULL;
}
