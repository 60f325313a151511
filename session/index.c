/* The persistent corpus index file: encode, write atomically, read and check. */
#include "session/index.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/buf.h"
#include "base/xmalloc.h"

#define IDX_MAGIC "ACPIDX\r\n"
#define IDX_END "ACPIEND\n"
#define IDX_MARKER 0x01020304u
#define IDX_HEAD 24
#define IDX_TRAIL 24
#define IDX_NONE 0xffffffffu
#define IDX_MAX_BYTES (4ull << 30)	/* a bigger file is not one we wrote */

/* FNV-1a over 64-bit words (then the tail bytes): fast enough for 20 MB, and any flip shows. */
uint64_t
sess_index_sum(const unsigned char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
	}
	for (; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static void
sess_index_put(struct buf *b, const void *v, size_t len)
{
	buf_append(b, v, len);
}

static void
sess_index_put_str(struct buf *b, const char *s)
{
	uint32_t len = s ? (uint32_t)strlen(s) : IDX_NONE;

	sess_index_put(b, &len, 4);
	if (s)
		sess_index_put(b, s, len);
}

static void
sess_index_encode(struct buf *b, struct sess_entry *const *v, size_t n)
{
	uint32_t version = SESS_INDEX_VERSION, marker = IDX_MARKER;
	uint64_t count = n, len, sum;

	sess_index_put(b, IDX_MAGIC, 8);
	sess_index_put(b, &version, 4);
	sess_index_put(b, &marker, 4);
	sess_index_put(b, &count, 8);
	for (size_t i = 0; i < n; i++) {
		const struct sess_entry *en = v[i];
		uint8_t state = (uint8_t)en->state;
		int64_t created = en->created_at, updated = en->updated_at, size = en->live ? -1 : (int64_t)en->size;
		int64_t sec = en->mtime.tv_sec, nsec = en->mtime.tv_nsec;
		int32_t depth = en->depth;
		sess_index_put(b, en->id, SESS_ID_LEN);
		sess_index_put(b, &state, 1);
		sess_index_put(b, &created, 8);
		sess_index_put(b, &updated, 8);
		sess_index_put(b, &depth, 4);
		sess_index_put(b, &size, 8);
		sess_index_put(b, &sec, 8);
		sess_index_put(b, &nsec, 8);
		sess_index_put_str(b, en->cwd);
		sess_index_put_str(b, en->parent);
		sess_index_put_str(b, en->origin);
		sess_index_put_str(b, en->title);
		sess_index_put_str(b, en->label);
		sess_index_put_str(b, en->mode);
		sess_index_put_str(b, en->agent_type);
		sess_index_put_str(b, en->type_description);
		sess_index_put_str(b, en->model);
		sess_index_put_str(b, en->branch);
	}
	len = b->len;
	sum = sess_index_sum((const unsigned char *)b->data, b->len);
	sess_index_put(b, &len, 8);
	sess_index_put(b, &sum, 8);
	sess_index_put(b, IDX_END, 8);
}

int
sess_index_write(const char *path, struct sess_entry *const *v, size_t n, struct err *e)
{
	struct buf b;
	int rc = 0;

	buf_init(&b);
	sess_index_encode(&b, v, n);
	if (atomic_write(path, b.data, b.len, 0600, 0) < 0)
		rc = err_set(e, ERR_SESSION_LOG_IO, "cannot write %s: %s", path, strerror(errno));
	buf_free(&b);
	return rc;
}

/* A bounded cursor over the bytes read: every take is checked against what is left. */
struct idx_cur {
	const unsigned char *p, *end;
};

static int
sess_index_take(struct idx_cur *c, void *out, size_t len)
{
	if ((size_t)(c->end - c->p) < len)
		return -1;
	memcpy(out, c->p, len);
	c->p += len;
	return 0;
}

/* One string field: absent (NULL), or owned text without NUL. */
static int
sess_index_take_str(struct idx_cur *c, char **out)
{
	uint32_t len;

	*out = NULL;
	if (sess_index_take(c, &len, 4) < 0)
		return -1;
	if (len == IDX_NONE)
		return 0;
	if ((size_t)(c->end - c->p) < len || memchr(c->p, '\0', len))
		return -1;
	*out = xstrndup((const char *)c->p, len);
	c->p += len;
	return 0;
}

static int
sess_index_take_entry(struct idx_cur *c, struct sess_entry *en)
{
	uint8_t state;
	int64_t size, sec, nsec;
	int32_t depth;
	char **strs[] = { &en->cwd, &en->parent, &en->origin, &en->title, &en->label, &en->mode, &en->agent_type,
		&en->type_description, &en->model, &en->branch };

	if (sess_index_take(c, en->id, SESS_ID_LEN) < 0 || !sess_id_validn(en->id, SESS_ID_LEN))
		return -1;
	en->id[SESS_ID_LEN] = '\0';
	if (sess_index_take(c, &state, 1) < 0 || state > SESS_ENTRY_UNSUPPORTED ||
	    sess_index_take(c, &en->created_at, 8) < 0 || sess_index_take(c, &en->updated_at, 8) < 0 ||
	    sess_index_take(c, &depth, 4) < 0 || sess_index_take(c, &size, 8) < 0 ||
	    sess_index_take(c, &sec, 8) < 0 || sess_index_take(c, &nsec, 8) < 0 || nsec < 0 ||
	    nsec >= 1000000000 || size < -1)
		return -1;
	en->state = (enum sess_entry_state)state;
	en->depth = depth;
	en->size = (off_t)size;
	en->mtime.tv_sec = (time_t)sec;
	en->mtime.tv_nsec = (long)nsec;
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (sess_index_take_str(c, strs[i]) < 0)
			return -1;
	/* An OK entry has what an OK header has; anything else was not written by us. */
	if (en->state == SESS_ENTRY_OK && en->cwd == NULL)
		return -1;
	return 0;
}

/* Checks the frame (trailer, length, checksum, header); returns the entry count or -1 with e. */
static int
sess_index_frame(const unsigned char *d, size_t len, uint64_t *count, struct err *e)
{
	uint64_t flen, sum;
	uint32_t version, marker;

	if (len < IDX_HEAD + IDX_TRAIL)
		return err_set(e, ERR_SESSION_CORRUPT, "%zu bytes: shorter than an empty index", len);
	if (memcmp(d, IDX_MAGIC, 8) != 0)
		return err_set(e, ERR_SESSION_CORRUPT, "not an index file");
	memcpy(&version, d + 8, 4);
	memcpy(&marker, d + 12, 4);
	if (marker != IDX_MARKER)
		return err_set(e, ERR_SESSION_UNSUPPORTED, "written with another byte order");
	if (version != SESS_INDEX_VERSION)
		return err_set(e, ERR_SESSION_UNSUPPORTED, "version %u, not %u", version, SESS_INDEX_VERSION);
	if (memcmp(d + len - 8, IDX_END, 8) != 0)
		return err_set(e, ERR_SESSION_CORRUPT, "no trailer: torn");
	memcpy(&flen, d + len - IDX_TRAIL, 8);
	memcpy(&sum, d + len - IDX_TRAIL + 8, 8);
	if (flen != len - IDX_TRAIL)
		return err_set(e, ERR_SESSION_CORRUPT, "length %llu, not %zu: torn", (unsigned long long)flen,
		    len - IDX_TRAIL);
	if (sum != sess_index_sum(d, len - IDX_TRAIL))
		return err_set(e, ERR_SESSION_CORRUPT, "checksum mismatch");
	memcpy(count, d + 16, 8);
	return 0;
}

enum sess_index_read
sess_index_read(const char *path, struct sess_entry ***out, size_t *n, struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	unsigned char *d = NULL;
	struct sess_entry **v = NULL;
	uint64_t count = 0;
	size_t k = 0;
	ssize_t got;
	enum sess_index_read rc = SESS_INDEX_BAD;

	*out = NULL;
	*n = 0;
	if (fd < 0 && errno == ENOENT)
		return SESS_INDEX_ABSENT;
	if (fd < 0) {
		err_set(e, ERR_SESSION_LOG_IO, "cannot open: %s", strerror(errno));
		return SESS_INDEX_BAD;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (unsigned long long)st.st_size > IDX_MAX_BYTES) {
		err_set(e, ERR_SESSION_CORRUPT, "not a regular file of a sane size");
		goto out;
	}
	d = xmalloc((size_t)st.st_size + 1);
	got = sess_pread_all(fd, (char *)d, (size_t)st.st_size, 0);
	if (got != st.st_size) {
		err_set(e, ERR_SESSION_LOG_IO, "cannot read: %s", got < 0 ? strerror(errno) : "short read");
		goto out;
	}
	if (sess_index_frame(d, (size_t)got, &count, e) < 0)
		goto out;
	/* The smallest entry is 105 bytes: a count beyond that is a lie, whatever the checksum says. */
	if (count > (uint64_t)got / 105) {
		err_set(e, ERR_SESSION_CORRUPT, "count %llu does not fit", (unsigned long long)count);
		goto out;
	}
	struct idx_cur c = { d + IDX_HEAD, d + got - IDX_TRAIL };
	v = xcalloc((size_t)count + 1, sizeof(*v));
	for (k = 0; k < count; k++) {
		v[k] = xcalloc(1, sizeof(*v[k]));
		if (sess_index_take_entry(&c, v[k]) < 0) {
			k++;
			err_set(e, ERR_SESSION_CORRUPT, "entry %zu is malformed", k);
			goto out;
		}
	}
	if (c.p != c.end) {
		err_set(e, ERR_SESSION_CORRUPT, "%zu bytes after the last entry", (size_t)(c.end - c.p));
		goto out;
	}
	*out = v;
	*n = k;
	v = NULL;
	rc = SESS_INDEX_OK;
out:
	if (v) {
		for (size_t i = 0; i < k; i++) {
			sess_entry_clear(v[i]);
			free(v[i]);
		}
		free(v);
	}
	free(d);
	close(fd);
	return rc;
}
