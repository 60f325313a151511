/* Loading, the read text, checked writes and the literal edit. */
#include "workspace/fs.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/utf8.h"

#define WS_FOOTER_ROOM 128u	/* kept free under WS_READ_TEXT_MAX for the footer */

/* "<n> MiB" for whole MiB, else "<n> bytes", into buf. */
static const char *
fs_limit(char *buf, size_t size, size_t limit)
{
	if (limit % (1u << 20) == 0)
		snprintf(buf, size, "%zu MiB", limit >> 20);
	else
		snprintf(buf, size, "%zu bytes", limit);
	return buf;
}

static int
fs_too_large(const char *p, size_t n, size_t limit, struct err *err)
{
	char lim[32];

	return err_set(err, ERR_FS_TOO_LARGE, "file \"%.300s\" is larger than %s (%zu bytes)", p,
	    fs_limit(lim, sizeof(lim), limit), n);
}

int
ws_fs_load(const struct ws_roots *r, const char *path, size_t max, struct ws_path *where,
    struct buf *out, struct err *err)
{
	int fd = ws_path_open_read(r, path, where, err);
	size_t start = out->len;
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0) {
		int e = errno;

		close(fd);
		return err_set(err, ERR_FS_IO, "cannot read \"%.300s\": %s", path, strerror(e));
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return fs_too_large(path, (size_t)st.st_size, max, err);
	}
	buf_reserve(out, st.st_size > 0 ? (size_t)st.st_size : 0);
	for (;;) {
		ssize_t n;

		buf_reserve(out, 65536);
		n = read(fd, out->data + out->len, out->cap - out->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			out->len = start;
			out->data[start] = '\0';
			return err_set(err, ERR_FS_IO, "cannot read \"%.300s\": %s", path, strerror(e));
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
		if (out->len - start > max) {	/* it grew while being read */
			size_t got = out->len - start;

			close(fd);
			out->len = start;
			out->data[start] = '\0';
			return fs_too_large(path, got, max, err);
		}
	}
	out->data[out->len] = '\0';
	close(fd);
	return 0;
}

/* The number of '\n' in s[0..n), eight bytes at a time. */
static size_t
fs_count_nl(const char *s, size_t n)
{
	const uint64_t ones = 0x0101010101010101ULL, low7 = 0x7f7f7f7f7f7f7f7fULL;
	size_t count = 0, i = 0;

	while (n - i >= 8) {
		uint64_t sum = 0;
		/* Per-byte counters in one word: at most 255 rounds before they are folded. */
		for (int r = 0; r < 255 && n - i >= 8; r++, i += 8) {
			uint64_t w, t;

			memcpy(&w, s + i, 8);
			w ^= ones * '\n';
			t = ~(((w & low7) + low7) | w | low7);	/* 0x80 where a byte was '\n' */
			sum += t >> 7;
		}
		/* Eight counters of at most 255: pairs into 16-bit lanes, then their sum. */
		sum = (sum & 0x00ff00ff00ff00ffULL) + ((sum >> 8) & 0x00ff00ff00ff00ffULL);
		count += (size_t)((sum * 0x0001000100010001ULL) >> 48);
	}
	for (; i < n; i++)
		count += s[i] == '\n';
	return count;
}

/* Lines in s[0..n): the '\n's, plus one for an unterminated last line. */
static size_t
fs_count_lines(const char *s, size_t n)
{
	return fs_count_nl(s, n) + (n > 0 && s[n - 1] != '\n');
}

/* Appends "%6zu\t": right-aligned in six columns, wider when it must be. */
static void
fs_put_number(struct buf *out, size_t num)
{
	char tmp[24], *e = tmp + sizeof(tmp) - 1, *q = e;

	*e = '\t';
	do {
		*--q = (char)('0' + num % 10);
		num /= 10;
	} while (num);
	while (e - q < 6)
		*--q = ' ';
	buf_append(out, q, (size_t)(e - q) + 1);
}

/* Appends one line's text: cut at WS_LINE_CHARS characters, invalid bytes as U+FFFD. */
static void
fs_put_line(struct buf *out, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	const size_t most = (size_t)4 * WS_LINE_CHARS;	/* bytes WS_LINE_CHARS characters span */
	size_t chars = 0, i = 0, check = n < most ? n : most;

	if (n <= WS_LINE_CHARS && utf8_valid(s, n)) {
		buf_append(out, s, n);
		return;
	}
	if (utf8_valid(s, check)) {
		/* Valid: the cut falls where the next character after the last one kept starts. */
		for (i = 0; i < check && chars <= WS_LINE_CHARS; i++)
			chars += (u[i] & 0xc0) != 0x80;
		if (chars > WS_LINE_CHARS)
			i--;
		buf_append(out, s, i);
		return;
	}
	buf_reserve(out, check + (size_t)3 * WS_LINE_CHARS);
	for (i = 0; i < n && chars < WS_LINE_CHARS; chars++) {
		size_t l = utf8_seq_len(u + i, n - i);

		if (l == 0) {
			buf_append(out, "\xef\xbf\xbd", 3);
			i++;
		} else {
			buf_append(out, s + i, l);
			i += l;
		}
	}
}

int
ws_fs_read_render(const char *p, const char *data, size_t len, size_t offset, size_t limit,
    struct buf *out, struct ws_read_span *span, struct err *err)
{
	const char *s = data, *end = data + len, *nl = NULL;
	size_t line = 1, shown = 0, budget = WS_READ_TEXT_MAX - WS_FOOTER_ROOM;
	size_t base = out->len;

	memset(span, 0, sizeof(*span));
	if (offset == 0)
		offset = 1;
	if (limit == 0)
		limit = WS_READ_LINES;
	if (memchr(data, '\0', len < WS_BINARY_SCAN ? len : WS_BINARY_SCAN) != NULL)
		return err_set(err, ERR_FS_BINARY, "file \"%.300s\" is binary (a NUL byte in its first 8 KiB)", p);
	/* To the offset: whole 4 KiB blocks while more lines are to go than one can hold. */
	while (offset - line > 4096 && end - s >= 4096) {
		line += fs_count_nl(s, 4096);
		s += 4096;
	}
	while (line < offset && (nl = memchr(s, '\n', (size_t)(end - s))) != NULL) {
		s = nl + 1;
		line++;
	}
	if (line < offset || (s == end && (len > 0 || offset > 1))) {
		span->total = fs_count_lines(data, len);
		buf_printf(out, "[offset %zu is past the end; the file has %zu line%s]", offset,
		    span->total, span->total == 1 ? "" : "s");
		return 0;
	}
	buf_reserve(out, budget + 8192);
	out->data[out->len] = '\0';	/* buf_reserve leaves a fresh buffer unterminated */
	while (shown < limit && s < end) {
		size_t mark = out->len, n;

		nl = memchr(s, '\n', (size_t)(end - s));
		n = (size_t)((nl ? nl : end) - s);
		if (shown)
			buf_append(out, "\n", 1);
		fs_put_number(out, line + shown);
		fs_put_line(out, s, n > 0 && s[n - 1] == '\r' ? n - 1 : n);
		if (out->len - base > budget && shown > 0) {
			out->len = mark;
			out->data[mark] = '\0';
			break;
		}
		shown++;
		s = nl ? nl + 1 : end;
	}
	if (shown == 0)
		return 0;	/* the empty file */
	span->first = line;
	span->last = line + shown - 1;
	span->total = span->last + fs_count_lines(s, (size_t)(end - s));
	span->more = span->last < span->total;
	if (span->more)
		buf_printf(out, "\n[lines %zu-%zu of %zu; continue with offset=%zu]", span->first,
		    span->last, span->total, span->last + 1);
	return 0;
}

int
ws_fs_write(const struct ws_roots *r, const char *path, const char *data, size_t len,
    int flags, struct ws_path *out, struct err *err)
{
	if (len > WS_FILE_MAX)
		return err_set(err, ERR_FS_TOO_LARGE, "content for \"%.300s\" is larger than 8 MiB (%zu bytes)",
		    path, len);
	if (!utf8_valid(data, len))
		return err_set(err, ERR_FS_NOT_UTF8, "content for \"%.300s\" is not valid UTF-8", path);
	return ws_path_write(r, path, data, len, flags, out, err);
}

/* s with every '\n' not preceded by '\r' turned into "\r\n"; owned, into b. */
static void
fs_to_crlf(struct buf *b, const char *s)
{
	buf_init(b);
	buf_append(b, "", 0);
	for (const char *q = s; *q; q++) {
		if (*q == '\n' && (q == s || q[-1] != '\r'))
			buf_append(b, "\r", 1);
		buf_append(b, q, 1);
	}
}

/*
 * The replacements of a (an) by b (bn) in old[0..len) into out; the number of matches seen
 * (stopping at 2 unless all, then counting on without building when not all).
 */
static size_t
fs_replace(const char *old, size_t len, const char *a, size_t an, const char *b, size_t bn,
    int all, struct ws_edit *out)
{
	const char *s = old, *end = old + len, *m;
	size_t count = 0;

	while ((m = memmem(s, (size_t)(end - s), a, an)) != NULL) {
		if (count == 0)
			out->first_line = 1 + fs_count_nl(old, (size_t)(m - old));
		if (all || count == 0) {
			buf_append(&out->text, s, (size_t)(m - s));
			buf_append(&out->text, b, bn);
		}
		count++;
		s = m + an;
	}
	buf_append(&out->text, s, (size_t)(end - s));
	return count;
}

int
ws_fs_edit(const char *p, const char *old, size_t len, const char *old_string,
    const char *new_string, int replace_all, struct ws_edit *out, struct err *err)
{
	struct buf a, b;
	size_t an = strlen(old_string), bn = strlen(new_string), count;

	memset(out, 0, sizeof(*out));
	buf_init(&out->text);
	if (an == 0)
		return err_set(err, ERR_INVALID_ARGUMENT, "invalid arguments: \"old_string\" must not be empty");
	if (len > WS_FILE_MAX)
		return fs_too_large(p, len, WS_FILE_MAX, err);
	if (!utf8_valid(old, len))
		return err_set(err, ERR_FS_NOT_UTF8, "file \"%.300s\" is not valid UTF-8", p);
	if (!utf8_valid(new_string, bn))
		return err_set(err, ERR_FS_NOT_UTF8, "new_string is not valid UTF-8");
	buf_reserve(&out->text, len + (bn > an ? bn - an : 0) + 64);
	count = fs_replace(old, len, old_string, an, new_string, bn, replace_all, out);
	if (count == 0 && memmem(old, len, "\r\n", 2) != NULL) {
		fs_to_crlf(&a, old_string);
		fs_to_crlf(&b, new_string);
		if (a.len != an) {
			out->text.len = 0;
			count = fs_replace(old, len, a.data, a.len, b.data, b.len, replace_all, out);
			out->crlf = count > 0;
		}
		buf_free(&a);
		buf_free(&b);
	}
	if (count == 0)
		return err_set(err, ERR_EDIT_NO_MATCH, "old_string not found in \"%.300s\"", p);
	if (count > 1 && !replace_all)
		return err_set(err, ERR_EDIT_AMBIGUOUS,
		    "old_string occurs %zu times in \"%.300s\"; add context or set replace_all", count, p);
	out->count = count;
	if (out->text.len > WS_FILE_MAX)
		return err_set(err, ERR_FS_TOO_LARGE,
		    "the edit would make \"%.300s\" larger than 8 MiB (%zu bytes)", p, out->text.len);
	return 0;
}

void
ws_edit_free(struct ws_edit *e)
{
	buf_free(&e->text);
}
