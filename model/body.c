/* A chat request's body with images (model/body.h). */
#include "model/body.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/blob.h"
#include "base/imgtype.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

#define BODY_MARK "acp-image:"
#define BODY_CHUNK ((size_t)48 << 10)	/* raw bytes encoded at a time: a multiple of 3 */

void
body_nonce(char out[17])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char r[8];

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		struct timespec ts;
		uint64_t v;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)out ^ (uint64_t)getpid() << 32;
		memcpy(r, &v, sizeof(r));
	}
	for (size_t i = 0; i < sizeof(r); i++) {
		out[2 * i] = hex[r[i] >> 4];
		out[2 * i + 1] = hex[r[i] & 15];
	}
	out[16] = '\0';
}

size_t
body_mark_images(json_t *messages, const char *nonce)
{
	size_t i, j, n = 0;
	json_t *m, *img;

	json_array_foreach(messages, i, m) {
		json_t *images = json_object_get(m, "images"), *parts;
		const json_t *text = json_object_get(m, "content");
		if (images == NULL)
			continue;
		parts = json_array();
		if (json_is_string(text) && json_string_length(text) > 0)
			json_array_append_new(parts, xjson_pack("{s:s, s:O}", "type", "text", "text", text));
		json_array_foreach(images, j, img) {
			char url[64];
			snprintf(url, sizeof(url), BODY_MARK "%s:%zu", nonce, n++);
			json_array_append_new(parts, xjson_pack("{s:s, s:{s:s}}", "type", "image_url", "image_url", "url", url));
		}
		json_object_set_new(m, "content", parts);
		json_object_del(m, "images");
	}
	return n;
}

/* The images of messages, in order, opened. */
static int
body_open(struct body *b, const json_t *messages, const char *state_dir, struct err *e)
{
	char *dir = xasprintf("%s/blobs", state_dir ? state_dir : ".");
	size_t i, j, k = 0;
	const json_t *m, *img;
	int rc = 0;

	json_array_foreach(messages, i, m) {
		json_array_foreach(json_object_get(m, "images"), j, img) {
			struct body_image *bi = &b->images[k++];
			const char *blob = json_string_value(json_object_get(img, "blob"));
			const char *mime = json_string_value(json_object_get(img, "mimeType"));
			json_int_t bytes = json_integer_value(json_object_get(img, "bytes"));
			/* the type goes into the body unescaped: only the four a prompt may have */
			if (!imgtype_known(mime)) {
				mime = "application/octet-stream";
				if (rc == 0)
					rc = err_set(e, ERR_MODEL_REQUEST, "image blob %.80s has an unknown type", blob ? blob : "");
			}
			bi->prefix = xasprintf("data:%s;base64,", mime);
			snprintf(bi->blob, sizeof(bi->blob), "%s", blob ? blob : "");
			bi->bytes = bytes > 0 ? (size_t)bytes : 0;
			if (rc == 0 && (bi->fd = blob_open(dir, bi->blob, bi->bytes, e)) < 0)
				rc = -1;
			if (k == b->nimages)
				goto out;
		}
	}
out:
	free(dir);
	if (rc < 0)
		e->code = ERR_MODEL_REQUEST;
	return rc;
}

int
body_make(struct body *b, char *text, size_t len, const json_t *messages, const char *nonce, const char *state_dir,
    struct err *e)
{
	char mark[sizeof(BODY_MARK) + 17];
	size_t i, w = 0, r = 0, n = 0, ml;

	memset(b, 0, sizeof(*b));
	buf_init(&b->out);
	/* Count the images the messages name: the marks must be exactly those. */
	for (i = 0; i < json_array_size(messages); i++)
		n += json_array_size(json_object_get(json_array_get(messages, i), "images"));
	b->nimages = n;
	b->images = xcalloc(n ? n : 1, sizeof(*b->images));
	b->cuts = xcalloc(n ? n : 1, sizeof(*b->cuts));
	for (i = 0; i < n; i++)
		b->images[i].fd = -1;
	/* Cut each mark out of the text, in place: text[0..w) is what stays. */
	ml = (size_t)snprintf(mark, sizeof(mark), BODY_MARK "%s:", nonce);
	for (i = 0; i < n; i++) {
		char *at = memmem(text + r, len - r, mark, ml), *q;
		size_t k;
		if (at == NULL || (q = memchr(at, '"', len - (size_t)(at - text))) == NULL ||
		    sscanf(at + ml, "%zu", &k) != 1 || k != i) {
			free(text);
			err_set(e, ERR_MODEL_REQUEST, "the request to the model could not be built (image %zu)", i);
			return -1;
		}
		memmove(text + w, text + r, (size_t)(at - text) - r);
		w += (size_t)(at - text) - r;
		b->cuts[i] = w;
		r = (size_t)(q - text);
	}
	memmove(text + w, text + r, len - r);
	w += len - r;
	b->text = text;
	b->text_len = w;
	if (body_open(b, messages, state_dir, e) < 0)
		return -1;
	b->total = w;
	for (i = 0; i < n; i++)
		b->total += strlen(b->images[i].prefix) + BASE64_ENCODED_LEN(b->images[i].bytes);
	sha256_init(&b->hash);
	return 0;
}

void
body_free(struct body *b)
{
	for (size_t i = 0; i < b->nimages; i++) {
		free(b->images[i].prefix);
		if (b->images[i].fd >= 0)
			close(b->images[i].fd);
	}
	free(b->images);
	free(b->cuts);
	free(b->text);
	buf_free(&b->out);
	memset(b, 0, sizeof(*b));
}

int
body_rewind(struct body *b)
{
	b->piece = 0;
	b->off = 0;
	buf_consume(&b->out, b->out.len);
	sha256_init(&b->hash);
	for (size_t i = 0; i < b->nimages; i++)
		if (lseek(b->images[i].fd, 0, SEEK_SET) < 0)
			return -1;
	return 0;
}

/* More of image k into b->out: its prefix, then encoded chunks; at its end the digest is checked. */
static int
body_fill(struct body *b, size_t k)
{
	struct body_image *im = &b->images[k];
	unsigned char raw[BODY_CHUNK];
	size_t want, got = 0;

	if (b->off == 0) {
		buf_puts(&b->out, im->prefix);
		sha256_init(&b->hash);
	}
	want = im->bytes - b->off < BODY_CHUNK ? im->bytes - b->off : BODY_CHUNK;
	while (got < want) {
		ssize_t n = read(im->fd, raw + got, want - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(b->error, sizeof(b->error), "image blob %s cannot be read: %s", im->blob,
			    n < 0 ? strerror(errno) : "it got shorter");
			return -1;
		}
		got += (size_t)n;
	}
	sha256_update(&b->hash, raw, got);
	buf_reserve(&b->out, BASE64_ENCODED_LEN(got));
	b->out.len += base64_encode(raw, got, b->out.data + b->out.len);
	b->off += got;
	if (b->off == im->bytes && !blob_check(im->blob, &b->hash)) {
		snprintf(b->error, sizeof(b->error), "image blob %s does not hold the bytes it is named by", im->blob);
		return -1;
	}
	return 0;
}

long
body_read(struct body *b, char *dst, size_t size)
{
	size_t done = 0;

	while (done < size) {
		if (b->out.len) {
			size_t n = b->out.len < size - done ? b->out.len : size - done;
			memcpy(dst + done, b->out.data, n);
			buf_consume(&b->out, n);
			done += n;
			continue;
		}
		if (b->piece > 2 * b->nimages)
			break;
		if (b->piece % 2 == 0) {
			/* text from where the last cut ended up to the next cut (or the end) */
			size_t k = b->piece / 2, start = k ? b->cuts[k - 1] : 0;
			size_t stop = k < b->nimages ? b->cuts[k] : b->text_len;
			size_t n = stop - start - b->off < size - done ? stop - start - b->off : size - done;
			memcpy(dst + done, b->text + start + b->off, n);
			done += n;
			b->off += n;
			if (start + b->off == stop) {
				b->piece++;
				b->off = 0;
			}
			continue;
		}
		size_t k = b->piece / 2;
		if (b->off == b->images[k].bytes && b->off != 0) {
			b->piece++;
			b->off = 0;
			continue;
		}
		if (body_fill(b, k) < 0)
			return -1;
		if (b->images[k].bytes == 0) {
			b->piece++;
			b->off = 0;
		}
	}
	return (long)done;
}
