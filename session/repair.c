/* inspect and the repair closers. */
#include "session/repair.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "session/event.h"
#include "session/jsonscan.h"

void
sess_image_free(struct sess_image *img)
{
	json_decref(img->header);
	json_decref(img->events);
	memset(img, 0, sizeof(*img));
}

int
sess_inspect_buf(const char *data, size_t len, struct sess_image *img, struct err *e)
{
	size_t pos = 0;
	int64_t seq = 0;
	int line_no = 0;

	memset(img, 0, sizeof(*img));
	img->events = json_array();
	while (pos < len) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - data) : len;
		json_t *j;
		int last = (nl == NULL || end + 1 == len);
		line_no++;
		j = nl ? sess_json_parse_line(data + pos, end - pos) : NULL;
		if (j == NULL) {
			if (last && line_no > 1) {
				/* A torn last line: no newline, or not JSON. */
				img->torn = 1;
				break;
			}
			if (line_no == 1)
				return err_set(e, "session_corrupt", "the session header is unreadable");
			return err_set(e, "session_corrupt", "line %d is not valid JSON", line_no);
		}
		if (line_no == 1) {
			if (sess_header_check(j, e) < 0) {
				json_decref(j);
				return -1;
			}
			img->header = j;
		} else {
			int ok = sess_event_check(j, seq, e);
			if (ok < 0) {
				json_decref(j);
				return -1;
			}
			/* Ignorable unknown events stay, so seq stays contiguous in memory. */
			seq++;
			json_array_append_new(img->events, j);
		}
		pos = end + 1;
		img->valid_len = (off_t)pos;
	}
	if (img->header == NULL)
		return err_set(e, "session_corrupt", "the session file is empty");
	img->nclosers = sess_closers_append(img->events);
	return 0;
}

int
sess_inspect_file(const char *path, struct sess_image *img, struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	char *data;
	size_t got = 0;
	int rc;

	memset(img, 0, sizeof(*img));
	if (fd < 0)
		return err_set(e, errno == ENOENT ? "unknown_session" : "session_log_io",
		    "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(e, "session_log_io", "%s is not a regular file", path);
	}
	data = xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	rc = sess_inspect_buf(data, got, img, e);
	free(data);
	return rc;
}

/* Pulls the seq of the last event, or -1. */
static int64_t
sess_last_seq(json_t *events, int64_t *time)
{
	size_t n = json_array_size(events);
	json_t *last;

	if (n == 0)
		return -1;
	last = json_array_get(events, n - 1);
	*time = json_integer_value(json_object_get(last, "time"));
	return json_integer_value(json_object_get(last, "seq"));
}

static void
sess_closer_push(json_t *events, const char *type, json_t *data)
{
	int64_t time = 0;
	int64_t seq = sess_last_seq(events, &time) + 1;

	json_array_append_new(events, sess_event_new(seq, time, type, data));
}

size_t
sess_closers_append(json_t *events)
{
	size_t n = json_array_size(events), before = n;
	json_t *turn = NULL, *step_start = NULL, *assistant = NULL;
	json_t *called = json_object(), *resulted = json_object();

	for (size_t i = 0; i < n; i++) {
		json_t *ev = json_array_get(events, i), *data = json_object_get(ev, "data");
		const char *type = json_string_value(json_object_get(ev, "type"));
		const char *cid = json_string_value(json_object_get(data, "callId"));
		if (strcmp(type, "turn/start") == 0) {
			turn = ev;
			step_start = assistant = NULL;
		} else if (strcmp(type, "turn/end") == 0) {
			turn = step_start = assistant = NULL;
		} else if (strcmp(type, "step/start") == 0) {
			step_start = ev;
			assistant = NULL;
			json_object_clear(called);
			json_object_clear(resulted);
		} else if (strcmp(type, "step/end") == 0) {
			step_start = assistant = NULL;
		} else if (strcmp(type, "assistant/message") == 0) {
			assistant = ev;
		} else if (strcmp(type, "tool/call") == 0 && cid) {
			json_object_set_new(called, cid, json_true());
		} else if (strcmp(type, "tool/result") == 0 && cid) {
			json_object_set_new(resulted, cid, json_true());
		}
	}
	if (turn == NULL)
		goto out;
	json_t *tdata = json_object_get(turn, "data");
	json_int_t tno = json_integer_value(json_object_get(tdata, "turn"));
	if (step_start) {
		json_int_t sno = json_integer_value(json_object_get(json_object_get(step_start, "data"), "step"));
		json_t *content = json_object_get(json_object_get(assistant, "data"), "content");
		size_t k;
		json_t *block;
		json_array_foreach(content, k, block) {
			const char *cid = json_string_value(json_object_get(block, "callId"));
			const char *btype = json_string_value(json_object_get(block, "type"));
			if (!btype || strcmp(btype, "tool-call") != 0 || !cid || json_object_get(resulted, cid))
				continue;
			int started = json_object_get(called, cid) != NULL;
			const char *name = json_string_value(json_object_get(block, "name"));
			sess_closer_push(events, "tool/result",
			    json_pack("{s:I, s:I, s:s, s:s, s:[{s:s, s:s}], s:b, s:{s:s}}", "turn", tno,
				"step", sno, "callId", cid, "name", name ? name : "",
				"content", "type", "text", "text",
				started ? SESS_TEXT_OUTCOME_UNKNOWN : SESS_TEXT_NOT_STARTED, "isError", 1,
				"error", "code", started ? "TOOL_OUTCOME_UNKNOWN" : "TOOL_NOT_STARTED"));
		}
		sess_closer_push(events, "step/end", json_pack("{s:I, s:I}", "turn", tno, "step", sno));
	}
	sess_closer_push(events, "turn/end",
	    json_pack("{s:I, s:{s:s}}", "turn", tno, "reason", "kind", "interrupted"));
out:
	json_decref(called);
	json_decref(resulted);
	return json_array_size(events) - before;
}

/* ---- the scan: inspect's answers without keeping the events ---- */

/* Our own writer's prefix: {"seq":N,"time":T,"type":"X", ... Returns 1 and fills seq/type. */
static int
sess_scan_prefix(const char *s, size_t n, int64_t *seq, const char **type, size_t *tlen)
{
	const char *p = s, *end = s + n;
	int64_t v = 0;

	if (n < 8 || memcmp(p, "{\"seq\":", 7) != 0)
		return 0;
	p += 7;
	if (p >= end || *p < '0' || *p > '9')
		return 0;
	while (p < end && *p >= '0' && *p <= '9' && v < INT64_MAX / 10)
		v = v * 10 + (*p++ - '0');
	if (end - p < 9 || memcmp(p, ",\"time\":", 8) != 0)
		return 0;
	p += 8;
	const char *t0 = p;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	if (p == t0 || p - t0 > 18)
		return 0;	/* no integer, or one jansson might not hold: the full path decides */
	if (end - p < 9 || memcmp(p, ",\"type\":\"", 9) != 0)
		return 0;
	p += 9;
	const char *q = memchr(p, '"', (size_t)(end - p));
	/* our writer puts data fourth, an object; any other shape takes the full path */
	if (q == NULL || end - q < 10 || memcmp(q, "\",\"data\":{", 10) != 0)
		return 0;
	*seq = v;
	*type = p;
	*tlen = (size_t)(q - p);
	return 1;
}

static int
sess_type_is(const char *t, size_t n, const char *want)
{
	return strlen(want) == n && memcmp(t, want, n) == 0;
}

static int
sess_scan_keeps(const char *const *keep, const char *type, size_t tlen)
{
	for (size_t i = 0; keep && keep[i]; i++)
		if (sess_type_is(type, tlen, keep[i]))
			return 1;
	return 0;
}

static void
sess_scan_keep(struct sess_scan *sc, json_t *ev)
{
	if (sc->kept == NULL)
		sc->kept = json_array();
	json_array_append_new(sc->kept, ev);
}

void
sess_scan_free(struct sess_scan *sc)
{
	json_decref(sc->kept);
	sc->kept = NULL;
}

int
sess_scan_buf(const char *data, size_t len, const char *const *keep, struct sess_scan *sc, struct err *e)
{
	size_t pos = 0, open_turn = (size_t)-1;
	int64_t seq = 0;
	int line_no = 0;

	memset(sc, 0, sizeof(*sc));
	while (pos < len) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - data) : len, n = end - pos;
		const char *line = data + pos, *type = NULL;
		size_t tlen = 0;
		int64_t s = -1;
		int ok;
		int last = (nl == NULL || end + 1 == len);
		line_no++;
		if (line_no == 1) {
			json_t *h = nl ? sess_json_parse_line(line, n) : NULL;
			if (h == NULL)
				return err_set(e, "session_corrupt", "the session header is unreadable");
			ok = sess_header_check(h, e);
			json_decref(h);
			if (ok < 0)
				return -1;
		} else {
			/* The prefix holds what the event check looks at; the validator says yes only to
			 * what jansson, as load parses, accepts (duplicate keys included). */
			if (nl && sess_scan_prefix(line, n, &s, &type, &tlen) && sess_event_type_knownn(type, tlen) &&
			    json_scan_valid(line, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)) {
				if (s != seq)
					return err_set(e, "session_corrupt", "event seq gap: expected %lld", (long long)seq);
				if (keep && sess_scan_keeps(keep, type, tlen)) {
					json_t *j = sess_json_parse_line(line, n);
					if (j == NULL)	/* cannot be: the validator said jansson takes it */
						return err_set(e, "session_corrupt", "line %d is not valid JSON", line_no);
					sess_scan_keep(sc, j);
				}
			} else {
				/* Anything else takes the full path: repair, parse, check. */
				json_t *j = nl ? sess_json_parse_line(line, n) : NULL;
				if (j == NULL) {
					if (last) {
						sc->torn = 1;
						break;
					}
					return err_set(e, "session_corrupt", "line %d is not valid JSON", line_no);
				}
				ok = sess_event_check(j, seq, e);
				if (ok < 0) {
					json_decref(j);
					return -1;
				}
				const char *t = json_string_value(json_object_get(j, "type"));
				/* the open turn is tracked on this path too: the closers depend on it */
				if (strcmp(t, "turn/start") == 0)
					open_turn = pos;
				else if (strcmp(t, "turn/end") == 0)
					open_turn = (size_t)-1;
				if (ok == 1 && keep && sess_scan_keeps(keep, t, strlen(t)))
					sess_scan_keep(sc, j);
				else
					json_decref(j);
				type = NULL;
			}
			if (type && sess_type_is(type, tlen, "turn/start"))
				open_turn = pos;
			else if (type && sess_type_is(type, tlen, "turn/end"))
				open_turn = (size_t)-1;
			seq++;
		}
		pos = end + 1;
		sc->valid_len = (off_t)pos;
	}
	if (line_no == 0)
		return err_set(e, "session_corrupt", "the session file is empty");
	sc->nevents = (long)seq;
	if (open_turn != (size_t)-1) {
		/* Only the open turn is parsed in full: the closers depend on it alone. */
		json_t *tail = json_array();
		size_t p = open_turn;
		while (p < (size_t)sc->valid_len) {
			const char *nl = memchr(data + p, '\n', (size_t)sc->valid_len - p);
			json_t *j = sess_json_parse_line(data + p, (size_t)(nl - (data + p)));
			if (j)
				json_array_append_new(tail, j);
			p = (size_t)(nl - data) + 1;
		}
		sc->nclosers = sess_closers_append(tail);
		json_decref(tail);
	}
	return 0;
}

int
sess_scan_file(const char *path, const char *const *keep, struct sess_scan *sc, struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	char *data;
	int rc;

	memset(sc, 0, sizeof(*sc));
	if (fd < 0)
		return err_set(e, errno == ENOENT ? "unknown_session" : "session_log_io", "cannot open %s: %s", path,
		    strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(e, "session_log_io", "%s is not a regular file", path);
	}
	/* The file is mapped, not copied: the scan reads it once. */
	data = st.st_size ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (st.st_size && data == MAP_FAILED)
		return err_set(e, "session_log_io", "cannot map %s: %s", path, strerror(errno));
	rc = sess_scan_buf(data ? data : "", (size_t)st.st_size, keep, sc, e);
	if (data)
		munmap(data, (size_t)st.st_size);
	return rc;
}
