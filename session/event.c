/* Header and event envelope construction and validation. */
#include "session/event.h"

#include <stdlib.h>
#include <string.h>

#include "base/jsonbuild.h"
#include "base/utf8.h"
#include "session/id.h"
#include "session/payload.h"


json_t *
sess_header_new(const struct sess_header_info *info)
{
	json_t *h = json_object();

	json_object_set_new(h, "type", json_string("session"));
	json_object_set_new(h, "version", json_integer(SESS_FORMAT_VERSION));
	json_object_set_new(h, "id", json_string(info->id));
	json_object_set_new(h, "createdAt", json_integer(info->created_at));
	json_object_set_new(h, "cwd", json_string(info->cwd));
	json_object_set_new(h, "delegationDepth", json_integer(info->depth));
	if (info->parent)
		json_object_set_new(h, "parentSession", json_string(info->parent));
	if (info->origin)
		json_object_set_new(h, "origin", json_string(info->origin));
	return h;
}

int
sess_header_check(const json_t *hdr, struct err *e)
{
	const json_t *v;

	if (!json_is_object(hdr))
		return err_set(e, ERR_SESSION_CORRUPT, "the header is not a JSON object");
	if (!json_is_string(json_object_get(hdr, "type")) ||
	    strcmp(json_string_value(json_object_get(hdr, "type")), "session") != 0)
		return err_set(e, ERR_SESSION_CORRUPT, "the first line is not a session header");
	v = json_object_get(hdr, "version");
	if (!json_is_integer(v))
		return err_set(e, ERR_SESSION_CORRUPT, "the header has no version");
	if (json_integer_value(v) > SESS_FORMAT_VERSION)
		return err_set(e, ERR_SESSION_UNSUPPORTED, "the session format version %lld is newer than %d",
		    (long long)json_integer_value(v), SESS_FORMAT_VERSION);
	if (json_integer_value(v) < 1)
		return err_set(e, ERR_SESSION_CORRUPT, "the header version is invalid");
	if (!sess_id_valid(json_string_value(json_object_get(hdr, "id"))))
		return err_set(e, ERR_SESSION_CORRUPT, "the header id is malformed");
	if (!json_is_integer(json_object_get(hdr, "createdAt")))
		return err_set(e, ERR_SESSION_CORRUPT, "the header has no createdAt");
	v = json_object_get(hdr, "cwd");
	if (!json_is_string(v) || json_string_value(v)[0] != '/')
		return err_set(e, ERR_SESSION_CORRUPT, "the header cwd is not absolute");
	if (!json_is_integer(json_object_get(hdr, "delegationDepth")))
		return err_set(e, ERR_SESSION_CORRUPT, "the header has no delegationDepth");
	v = json_object_get(hdr, "parentSession");
	if (v && !sess_id_valid(json_string_value(v)))
		return err_set(e, ERR_SESSION_CORRUPT, "the header parentSession is malformed");
	return 0;
}

json_t *
sess_event_new(int64_t seq, int64_t time, const char *type, json_t *data)
{
	json_t *ev = json_object();

	json_object_set_new(ev, "seq", json_integer(seq));
	json_object_set_new(ev, "time", json_integer(time));
	json_object_set_new(ev, "type", json_string(type));
	json_object_set_new(ev, "data", data ? data : json_object());
	return ev;
}

int
sess_event_type_known(const char *type)
{
	return sess_event_type_knownn(type, strlen(type));
}

int
sess_event_type_code(const char *type)
{
	return (int)sess_ev_of(type);
}

int
sess_event_type_knownn(const char *t, size_t n)
{
	return sess_payload_known(t, n);
}

int
sess_event_check(const json_t *ev, int64_t seq, struct err *e)
{
	const json_t *s, *t;

	if (!json_is_object(ev))
		return err_set(e, ERR_SESSION_CORRUPT, "event %lld is not an object", (long long)seq);
	s = json_object_get(ev, "seq");
	if (!json_is_integer(s) || json_integer_value(s) != seq)
		return err_set(e, ERR_SESSION_CORRUPT, "event seq gap: expected %lld", (long long)seq);
	t = json_object_get(ev, "type");
	if (!json_is_string(t) || !json_is_integer(json_object_get(ev, "time")) ||
	    !json_is_object(json_object_get(ev, "data")))
		return err_set(e, ERR_SESSION_CORRUPT, "event %lld lacks type, time or data", (long long)seq);
	if (!sess_event_type_known(json_string_value(t))) {
		if (json_is_true(json_object_get(ev, "ignorable")))
			return 0;
		return err_set(e, ERR_SESSION_CORRUPT, "event %lld has unknown type \"%.40s\"", (long long)seq,
		    json_string_value(t));
	}
	if (sess_payload_check(json_string_value(t), json_object_get(ev, "data"), (long long)seq, e) < 0)
		return -1;
	return 1;
}

json_t *
sess_json_parse_line(const char *line, size_t len)
{
	/* The fast builder takes what the scan validates; anything else is jansson's to decide. */
	json_t *j = json_build(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL);

	if (j == NULL)
		j = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
	if (j == NULL && !utf8_valid(line, len)) {
		size_t n;
		char *fixed = utf8_repair(line, len, &n);
		j = json_loadb(fixed, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
		free(fixed);
	}
	return j;
}
