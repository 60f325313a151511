/* grep: buffered search (memmem, regexec per candidate line) over ws_walk, and its text. */
#include "workspace/grep.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/utf8.h"
#include "base/xmalloc.h"
#include "workspace/walk.h"

#define WS_GREP_BUF ((size_t)256 * 1024)	/* the read buffer's first size (at most the cap) */
#define WS_GREP_BINARY_PEEK 8192
#define WS_GREP_META ".[]()*+?{}|^$\\"
#define WS_GREP_WINDOW ((size_t)16 * 1024)	/* bytes per regexec call without a literal */

/*
 * One search. must (must_len bytes) is a string every matching line holds: the pattern itself
 * when literal (then re is not compiled), else the longest literal run of the regex, or NULL.
 * buf is the read buffer reused for every file (cap bytes and a NUL); it starts at a line's start
 * and grows, while one line fills it, up to WS_GREP_LINE_CAP. clipped: the region being searched is
 * the first WS_GREP_LINE_CAP bytes of a longer line.
 */
struct grep {
	const struct ws_grep_opts *o;
	regex_t re;
	int literal;
	int per_line;	/* the regex holds \` or \' (buffer anchors): each line is a buffer */
	char *must;
	size_t must_len;
	char *buf;
	size_t cap;
	size_t file_no;
	ws_grep_fn *fn;
	void *arg;
	int stop;
	int clipped;
	struct ws_grep_stats *stats;	/* never NULL during a search */
};

/* A matching line b[ls..le) (le: its newline or the end) and its first match b[so..eo). */
struct grep_span {
	size_t ls, le, so, eo;
};

/* Newlines in s[0..n), eight bytes at a time. */
static size_t
ws_grep_count_nl(const char *s, size_t n)
{
	const uint64_t ones = 0x0101010101010101ull, low7 = 0x7f7f7f7f7f7f7f7full;
	size_t c = 0, i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, s + i, 8);
		w ^= ones * '\n';
		/* A byte's high bit in t is clear only where w's byte is 0, that is a newline. */
		uint64_t t = ((w & low7) + low7) | w;
		c += ((~t >> 7 & ones) * ones) >> 56;
	}
	for (; i < n; i++)
		c += s[i] == '\n';
	return c;
}

/* The end of the bracket expression opening at p[i] == '['. */
static size_t
ws_grep_skip_bracket(const char *p, size_t i)
{
	size_t j = i + 1;

	if (p[j] == '^')
		j++;
	if (p[j] == ']')
		j++;
	while (p[j] && p[j] != ']') {
		if (p[j] == '[' && (p[j + 1] == ':' || p[j + 1] == '.' || p[j + 1] == '=')) {
			char close[3] = { p[j + 1], ']', '\0' };
			const char *c = strstr(p + j + 2, close);

			j = c ? (size_t)(c - p) + 2 : strlen(p);
			continue;
		}
		j++;
	}
	return p[j] ? j + 1 : j;
}

/* The end of the group opening at p[i] == '('. */
static size_t
ws_grep_skip_group(const char *p, size_t i)
{
	size_t j = i + 1;
	int depth = 1;

	while (p[j] && depth > 0) {
		if (p[j] == '\\') {
			j += p[j + 1] ? 2 : 1;
			continue;
		}
		if (p[j] == '[') {
			j = ws_grep_skip_bracket(p, j);
			continue;
		}
		if (p[j] == '(')
			depth++;
		else if (p[j] == ')')
			depth--;
		j++;
	}
	return j;
}

static void
ws_grep_keep_longer(struct buf *best, struct buf *run)
{
	if (run->len > best->len) {
		best->len = 0;
		buf_append(best, run->data, run->len);
	}
	run->len = 0;
}

/*
 * The longest run of literal bytes that every match of the ERE p (which compiled) must hold,
 * owned, or NULL. Conservative: an alternation anywhere gives none; groups, brackets, anchors,
 * '.', GNU escapes (\w, \b, \<, \1...) and whatever a '*', '?' or '{' makes optional end a run, and
 * an atom with '+' ends the run after it. In a multibyte locale only ASCII bytes count.
 */
static char *
ws_grep_must(const char *p, size_t *len)
{
	struct buf best, run;
	size_t i = 0, n = strlen(p);
	int mb = MB_CUR_MAX > 1;

	if (strchr(p, '|'))
		return NULL;
	buf_init(&best);
	buf_init(&run);
	while (i < n) {
		int lit = -1;
		size_t next = i + 1;
		unsigned char c = (unsigned char)p[i];

		if (c == '\\') {
			unsigned char d = (unsigned char)p[i + 1];

			next = d ? i + 2 : i + 1;
			/* \< \> \` \' are anchors, like \b and \w. */
			if (d && !isalnum(d) && !strchr("<>`'", d) && !(mb && d >= 0x80))
				lit = d;
		} else if (c == '[') {
			next = ws_grep_skip_bracket(p, i);
		} else if (c == '(') {
			next = ws_grep_skip_group(p, i);
		} else if (!strchr(".^$)*+?{", c) && !(mb && c >= 0x80)) {
			lit = c;
		}
		/* What the quantifiers after the atom make of it: exactly one '+' keeps it once. */
		size_t q = next;
		int plus = 0, other = 0;
		while (q < n && strchr("*+?{", p[q])) {
			if (p[q] == '{') {
				const char *close = strchr(p + q, '}');

				q = close ? (size_t)(close - p) + 1 : n;
				other = 1;
				continue;
			}
			if (p[q] == '+')
				plus++;
			else
				other = 1;
			q++;
		}
		if (lit >= 0 && !other && plus <= 1) {
			char ch = (char)lit;

			buf_append(&run, &ch, 1);
		}
		if (lit < 0 || other || plus)
			ws_grep_keep_longer(&best, &run);
		i = q;
	}
	ws_grep_keep_longer(&best, &run);
	buf_free(&run);
	*len = best.len;
	if (best.len == 0) {
		buf_free(&best);
		return NULL;
	}
	return buf_steal(&best);
}

/*
 * p with every '{' that cannot open an interval escaped, as GNU grep reads them ("struct s {",
 * "a{b", a '{' with nothing before it), owned; NULL when there is no such '{'.
 */
static char *
ws_grep_braces(const char *p)
{
	struct buf b;
	int changed = 0;

	buf_init(&b);
	for (size_t i = 0; p[i]; i++) {
		if (p[i] == '\\' && p[i + 1]) {
			buf_append(&b, p + i++, 2);
			continue;
		}
		if (p[i] == '[') {
			size_t j = ws_grep_skip_bracket(p, i);

			buf_append(&b, p + i, j - i);
			i = j - 1;
			continue;
		}
		if (p[i] == '{') {
			size_t j = i + 1;

			while (isdigit((unsigned char)p[j]))
				j++;
			if (p[j] == ',')
				for (j++; isdigit((unsigned char)p[j]); j++)
					;
			if (p[j] != '}' || j == i + 1 || i == 0 || strchr("(|^", p[i - 1])) {
				buf_puts(&b, "\\{");
				changed = 1;
				continue;
			}
		}
		buf_append(&b, p + i, 1);
	}
	if (!changed) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

/*
 * regexec over b[from..to), from a line's start to a line's end: 1 with the match in *so, *eo.
 * b[to] is a NUL for the call, so that a regexec interposer reading string to its NUL despite
 * REG_STARTEND (ASan's) reads no further than the range. A clipped line has no end in b: '$'
 * must not match at the cut (REG_NOTEOL).
 */
static int
ws_grep_exec(const struct grep *g, char *b, size_t from, size_t to, size_t *so, size_t *eo)
{
	regmatch_t pm = { 0, (regoff_t)(to - from) };
	char keep = b[to];
	int rc;

	b[to] = '\0';
	rc = regexec(&g->re, b + from, 1, &pm, REG_STARTEND | (g->clipped ? REG_NOTEOL : 0));
	b[to] = keep;
	if (rc != 0)
		return 0;
	*so = from + (size_t)pm.rm_so;
	*eo = from + (size_t)pm.rm_eo;
	return 1;
}

/*
 * Finds the first matching line in b[pos..end], pos a line's start and end the last line's end.
 * 1 when found. Without a literal to look for, regexec runs over windows of whole lines of about
 * WS_GREP_WINDOW bytes (line by line when per_line), and a match it finds is checked on its line
 * alone when it runs past the line's end (\s takes a newline).
 */
static int
ws_grep_next(struct grep *g, char *b, size_t pos, size_t end, struct grep_span *m)
{
	while (pos <= end) {
		size_t at, so = 0, eo = 0;

		if (g->must) {
			const char *h = memmem(b + pos, end - pos, g->must, g->must_len);

			if (h == NULL)
				return 0;
			at = (size_t)(h - b);
		} else {
			size_t w = end - pos > WS_GREP_WINDOW ? pos + WS_GREP_WINDOW : end;

			if (g->per_line)
				w = pos;
			const char *nl = w < end ? memchr(b + w, '\n', end - w) : NULL;
			size_t wend = nl ? (size_t)(nl - b) : end;

			if (!ws_grep_exec(g, b, pos, wend, &so, &eo)) {
				if (wend == end)
					return 0;
				pos = wend + 1;
				continue;
			}
			at = so;
		}
		const char *nl = at > pos ? memrchr(b + pos, '\n', at - pos) : NULL;
		m->ls = nl ? (size_t)(nl - b) + 1 : pos;
		nl = memchr(b + at, '\n', end - at);
		m->le = nl ? (size_t)(nl - b) : end;
		if (g->literal) {
			m->so = at;
			m->eo = at + g->must_len;
			return 1;
		}
		if ((g->must || eo > m->le) && !ws_grep_exec(g, b, m->ls, m->le, &so, &eo)) {
			pos = m->le + 1;
			continue;
		}
		m->so = so;
		m->eo = eo;
		return 1;
	}
	return 0;
}

/* Reports the matching lines of b[0..end]; *line_no is the number of the line at b[*counted]. */
static void
ws_grep_region(struct grep *g, const char *rel, char *b, size_t end, size_t *line_no,
    size_t *counted)
{
	struct grep_span m;
	size_t pos = 0;

	while (!g->stop && ws_grep_next(g, b, pos, end, &m)) {
		*line_no += ws_grep_count_nl(b + *counted, m.ls - *counted);
		*counted = m.ls;
		struct ws_grep_hit h = { rel, g->file_no, *line_no, b + m.ls, m.le - m.ls,
			m.so - m.ls, m.eo - m.ls, g->clipped };
		if (g->fn(g->arg, &h))
			g->stop = 1;
		pos = m.le + 1;
	}
}

static int
ws_grep_cancelled(const struct grep *g)
{
	return g->o->cancel && atomic_load(g->o->cancel);
}

/* read(2) of at most want bytes, retried on EINTR; 0 when want is 0. */
static ssize_t
ws_grep_read(int fd, char *p, size_t want)
{
	ssize_t n = 0;

	while (want > 0 && (n = read(fd, p, want)) < 0 && errno == EINTR)
		;
	return n;
}

/* Counts a line longer than WS_GREP_LINE_CAP, remembering where the first one is. */
static void
ws_grep_note_long(struct grep *g, const char *rel, size_t line_no)
{
	if (g->stats->long_lines++ == 0) {
		g->stats->long_rel = xstrdup(rel);
		g->stats->long_line_no = line_no;
	}
}

/*
 * Reads past the rest of a line longer than the buffer, a buffer at a time: memory stays bounded
 * and a cancel is seen between reads. 0: the next line's first *len bytes are at buf[0]; 1: the
 * file (or the part of it we read: *left) ended; -1: cancelled.
 */
static int
ws_grep_skip_line(struct grep *g, int fd, size_t *left, size_t *len)
{
	for (;;) {
		if (ws_grep_cancelled(g))
			return -1;
		ssize_t n = ws_grep_read(fd, g->buf, g->cap < *left ? g->cap : *left);
		if (n <= 0)
			return 1;
		*left -= (size_t)n;
		const char *nl = memchr(g->buf, '\n', (size_t)n);
		if (nl != NULL) {
			size_t next = (size_t)(nl - g->buf) + 1;

			*len = (size_t)n - next;
			memmove(g->buf, g->buf + next, *len);
			g->buf[*len] = '\0';
			return 0;
		}
	}
}

/*
 * Searches one file: reads it into the buffer (lines never split), searches each filled buffer's
 * whole lines, carries the unfinished last line over. Reads at most the size the file had at
 * open; a line that fills WS_GREP_LINE_CAP is searched clipped and the rest of it skipped.
 */
static int
ws_grep_file(void *arg, const struct ws_walk_file *f, int depth, struct err *e)
{
	struct grep *g = arg;
	/* Only a start file the caller named may be a symlink; O_NONBLOCK: a FIFO swapped in. */
	int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	size_t len = 0, line_no = 1, counted = 0, left;
	int eof = 0, checked = 0, cancelled = 0, fd;
	struct stat st;

	if (g->o->include && fnmatch(g->o->include, f->name, 0) != 0)
		return 0;
	if (depth > 0 || f->dirfd >= 0)
		flags |= O_NOFOLLOW;
	fd = f->dirfd >= 0 ? openat(f->dirfd, f->name, flags) : open(f->path, flags);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);	/* a FIFO or a device swapped in after the walk looked */
		return 0;
	}
	/* The size at open bounds the read: a file that keeps growing ends the search anyway. */
	left = st.st_size > 0 ? (size_t)st.st_size : WS_GREP_LINE_CAP;
	g->file_no++;
	for (;;) {
		if (ws_grep_cancelled(g)) {
			cancelled = 1;
			break;
		}
		if (len == g->cap && left > 0 && g->cap < WS_GREP_LINE_CAP) {
			g->cap = g->cap * 2 < WS_GREP_LINE_CAP ? g->cap * 2 : WS_GREP_LINE_CAP;
			g->buf = xrealloc(g->buf, g->cap + 1);
			if (g->cap > g->stats->buf_max)
				g->stats->buf_max = g->cap;
		}
		size_t room = g->cap - len;
		ssize_t n = ws_grep_read(fd, g->buf + len, room < left ? room : left);
		if (n < 0)
			break;
		left -= (size_t)n;
		if (n == 0 || left == 0)
			eof = 1;
		len += (size_t)n;
		g->buf[len] = '\0';	/* see ws_grep_exec */
		if (!checked) {
			if (len < WS_GREP_BINARY_PEEK && !eof)
				continue;
			checked = 1;
			size_t peek = len < WS_GREP_BINARY_PEEK ? len : WS_GREP_BINARY_PEEK;

			if (memchr(g->buf, '\0', peek))
				break;
		}
		if (!eof && len < g->cap)
			continue;	/* fill the buffer first: fewer, longer searches */
		size_t end;
		if (eof) {
			if (len == 0)
				break;
			end = g->buf[len - 1] == '\n' ? len - 1 : len;
		} else {
			const char *nl = memrchr(g->buf, '\n', len);

			if (nl == NULL && g->cap < WS_GREP_LINE_CAP)
				continue;	/* one line fills the buffer: it grows */
			if (nl == NULL) {
				/* One line fills the cap: search that much of it, skip the rest. */
				ws_grep_note_long(g, f->rel, line_no);
				g->clipped = 1;
				ws_grep_region(g, f->rel, g->buf, len, &line_no, &counted);
				g->clipped = 0;
				if (g->stop)
					break;
				int r = ws_grep_skip_line(g, fd, &left, &len);
				if (r != 0) {
					cancelled = r < 0;
					break;
				}
				line_no++;
				counted = 0;
				continue;
			}
			end = (size_t)(nl - g->buf);
		}
		ws_grep_region(g, f->rel, g->buf, end, &line_no, &counted);
		if (eof || g->stop)
			break;
		/* Carry the unfinished last line to the front. */
		line_no += ws_grep_count_nl(g->buf + counted, end + 1 - counted);
		counted = 0;
		memmove(g->buf, g->buf + end + 1, len - end - 1);
		len -= end + 1;
	}
	close(fd);
	if (cancelled)
		return err_set(e, ERR_CANCELLED, "search cancelled");
	return g->stop;
}

int
ws_grep_each(const struct ws_grep_opts *o, ws_grep_fn *fn, void *arg, struct err *e)
{
	struct ws_grep_stats unused;
	int rc = ws_grep_each_stats(o, fn, arg, &unused, e);

	free(unused.long_rel);
	return rc;
}

int
ws_grep_each_stats(const struct ws_grep_opts *o, ws_grep_fn *fn, void *arg,
    struct ws_grep_stats *stats, struct err *e)
{
	static const struct ws_walk_ops ops = { NULL, ws_grep_file };
	struct grep g = { .o = o, .fn = fn, .arg = arg, .stats = stats };
	int rc;

	memset(stats, 0, sizeof(*stats));

	if (strchr(o->pattern, '\n'))
		return err_set(e, ERR_INVALID_ARGUMENT,
		    "pattern must not contain a newline (grep matches one line at a time)");
	if (o->include && strchr(o->include, '/'))
		return err_set(e, ERR_INVALID_ARGUMENT,
		    "include \"%s\" is a file-name glob, without \"/\"; give the directory as path",
		    o->include);
	g.literal = strpbrk(o->pattern, WS_GREP_META) == NULL;
	if (g.literal) {
		g.must = xstrdup(o->pattern);
		g.must_len = strlen(o->pattern);
	} else {
		const char *pattern = o->pattern;
		char *fixed = NULL;
		int rc_re = regcomp(&g.re, pattern, REG_EXTENDED | REG_NEWLINE);

		/* A '{' opening no interval is literal, as in GNU grep (POSIX: undefined). */
		if (rc_re != 0 && (fixed = ws_grep_braces(pattern)) != NULL) {
			regex_t again;

			if (regcomp(&again, fixed, REG_EXTENDED | REG_NEWLINE) == 0) {
				g.re = again;	/* the failed one holds nothing to free */
				pattern = fixed;
				rc_re = 0;
			}
		}
		if (rc_re != 0) {
			char msg[160];

			regerror(rc_re, &g.re, msg, sizeof(msg));
			free(fixed);
			return err_set(e, ERR_INVALID_ARGUMENT,
			    "invalid regular expression \"%s\": %s", o->pattern, msg);
		}
		g.must = ws_grep_must(pattern, &g.must_len);
		g.per_line = strstr(pattern, "\\`") || strstr(pattern, "\\'");
		free(fixed);
	}
	g.cap = WS_GREP_BUF;
	g.buf = xmalloc(g.cap + 1);
	g.stats->buf_max = g.cap;
	rc = ws_walk(o->root, o->path, 1, &ops, &g, o->cancel, e);
	free(g.buf);
	free(g.must);
	if (!g.literal)
		regfree(&g.re);
	return rc;
}

/* The result text under way: lines shown so far and the file of the last one. */
struct grep_text {
	struct buf out;
	size_t n, file_no;
	int cut;
};

/*
 * Appends a line, cut to WS_GREP_LINE_MAX bytes around its match s[so..eo); clipped: s[0..len)
 * is the start of a longer line.
 */
static void
ws_grep_put_line(struct buf *out, const char *s, size_t len, size_t so, size_t eo, int clipped)
{
	size_t start = 0, n;

	if (len <= WS_GREP_LINE_MAX && !clipped) {
		ws_walk_show(out, s, len);
		return;
	}
	if (eo > WS_GREP_LINE_MAX) {
		start = so > 100 ? so - 100 : 0;
		while (start < so && ((unsigned char)s[start] & 0xc0) == 0x80)
			start++;
	}
	n = utf8_boundary(s + start, len - start, WS_GREP_LINE_MAX);
	if (start > 0)
		buf_printf(out, "[\xe2\x80\xa6 %zu bytes] ", start);
	ws_walk_show(out, s + start, n);
	if (clipped)
		buf_printf(out, " [\xe2\x80\xa6 over %zu bytes]", len - start - n);
	else if (start + n < len)
		buf_printf(out, " [\xe2\x80\xa6 %zu bytes]", len - start - n);
}

static int
ws_grep_put(void *arg, const struct ws_grep_hit *h)
{
	struct grep_text *t = arg;
	size_t len = h->len;

	if (t->n == WS_GREP_MAX) {
		t->cut = 1;
		return 1;
	}
	if (h->file_no != t->file_no) {
		if (t->n > 0)
			buf_append(&t->out, "\n", 1);
		ws_walk_show(&t->out, h->rel, strlen(h->rel));
		t->file_no = h->file_no;
	}
	buf_printf(&t->out, "\n  %zu: ", h->line_no);
	if (len > 0 && h->line[len - 1] == '\r' && !h->clipped)
		len--;
	ws_grep_put_line(&t->out, h->line, len, h->so < len ? h->so : len,
	    h->eo < len ? h->eo : len, h->clipped);
	t->n++;
	return 0;
}

int
ws_grep(const struct ws_grep_opts *o, struct buf *out, struct err *e)
{
	struct grep_text t = { .n = 0 };
	struct ws_grep_stats st;

	buf_init(&t.out);
	if (ws_grep_each_stats(o, ws_grep_put, &t, &st, e) != 0) {
		free(st.long_rel);
		buf_free(&t.out);
		return -1;
	}
	if (t.n == 0)
		buf_printf(out, "no matches for %s", o->pattern);
	else
		buf_append(out, t.out.data, t.out.len);
	if (t.cut)
		buf_printf(out, "\n[cut at %d matching lines; narrow the pattern, path or include]",
		    WS_GREP_MAX);
	if (st.long_lines > 0) {
		size_t k = st.long_lines;

		buf_printf(out, "\n[%zu line%s longer than %zu MiB %s searched in %s first %zu MiB "
		    "only; the first: ", k, k == 1 ? "" : "s", WS_GREP_LINE_CAP >> 20,
		    k == 1 ? "was" : "were", k == 1 ? "its" : "their", WS_GREP_LINE_CAP >> 20);
		ws_walk_show(out, st.long_rel, strlen(st.long_rel));
		buf_printf(out, ":%zu]", st.long_line_no);
	}
	free(st.long_rel);
	buf_free(&t.out);
	return 0;
}
