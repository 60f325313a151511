/* The payload table and its one checker. */
#include "session/payload.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "session/evtype.h"

/* PK_COUNT: an integer from 0 below INT_MAX (turn, step, epoch, revision), so that the readers'
 * int arithmetic (the next turn is turn + 1) cannot overflow on a lying log. */
enum sess_pk { PK_STR = 1, PK_INT, PK_COUNT, PK_BOOL, PK_OBJ, PK_ARR, PK_ANY };

#define REQ 0		/* the default: the field must be there */
#define OPT 1		/* may be absent; when present, of its kind */
#define NONEMPTY 2	/* an array with at least one element */

struct pshape;

struct pfield {
	const char *name;
	unsigned char kind;
	unsigned char flags;
	unsigned char elem;		/* PK_ARR: the kind of every element */
	const struct pshape *sub;	/* PK_OBJ, or PK_ARR of PK_OBJ: the shape inside */
};

struct pvariant {
	const char *type;
	const struct pshape *shape;
};

/* An object: its fields; with variants, also a string "type" choosing more fields. */
struct pshape {
	const struct pfield *fields;
	const struct pvariant *variants;
	int open;			/* an unknown "type" is allowed (content from the client) */
};

#define F(n, k) { n, k, REQ, 0, NULL }
#define FO(n, k) { n, k, OPT, 0, NULL }
#define FS(n, k, s) { n, k, REQ, 0, s }
#define FSO(n, k, s) { n, k, OPT, 0, s }
#define FA(n, el, fl, s) { n, PK_ARR, fl, el, s }
#define END { NULL, 0, 0, 0, NULL }
#define SHAPE(name, ...) static const struct pfield name##_f[] = { __VA_ARGS__, END }; \
	static const struct pshape name = { name##_f, NULL, 0 }

SHAPE(p_text, F("text", PK_STR));
SHAPE(p_tool_call_block, F("callId", PK_STR), F("name", PK_STR), F("arguments", PK_STR));
SHAPE(p_resource, FO("uri", PK_STR), FO("text", PK_STR));
SHAPE(p_resource_block, FS("resource", PK_OBJ, &p_resource));
SHAPE(p_link_block, FO("uri", PK_STR));
SHAPE(p_image_block, F("mimeType", PK_STR), F("blob", PK_STR), F("bytes", PK_COUNT));

static const struct pfield p_typed_f[] = { F("type", PK_STR), END };
static const struct pvariant p_user_blocks[] = {
	{ "text", &p_text }, { "resource", &p_resource_block }, { "resource_link", &p_link_block },
	{ "image", &p_image_block }, { NULL, NULL },
};
static const struct pshape p_user_block = { p_typed_f, p_user_blocks, 1 };
static const struct pvariant p_assistant_blocks[] = {
	{ "text", &p_text }, { "reasoning", &p_text }, { "tool-call", &p_tool_call_block }, { NULL, NULL },
};
static const struct pshape p_assistant_block = { p_typed_f, p_assistant_blocks, 0 };
static const struct pvariant p_result_blocks[] = { { "text", &p_text }, { NULL, NULL } };
static const struct pshape p_result_block = { p_typed_f, p_result_blocks, 0 };

SHAPE(p_settlement, F("childId", PK_STR), F("epoch", PK_COUNT));
SHAPE(p_source, F("kind", PK_STR), FO("senderSessionId", PK_STR), FO("summary", PK_STR),
    FSO("settlement", PK_OBJ, &p_settlement), FO("senderName", PK_STR), FO("messageId", PK_STR));
SHAPE(p_code, F("code", PK_STR));
SHAPE(p_reason, F("kind", PK_STR), FO("cause", PK_STR), FO("message", PK_STR));
SHAPE(p_member, F("name", PK_STR), FO("id", PK_STR), FO("description", PK_STR), FO("phase", PK_STR),
    FO("error", PK_STR));
SHAPE(p_task, F("id", PK_STR), F("revision", PK_COUNT), F("subject", PK_STR), F("description", PK_STR),
    F("status", PK_STR), FA("blockedBy", PK_STR, REQ, NULL), FA("writeScopes", PK_STR, REQ, NULL),
    FO("ownerName", PK_STR));
SHAPE(p_message, F("id", PK_STR), F("senderName", PK_STR), F("targetName", PK_STR), F("content", PK_STR),
    FO("senderMessageId", PK_STR));

SHAPE(e_created, F("mode", PK_STR), F("model", PK_STR));
SHAPE(e_mode, F("mode", PK_STR));
SHAPE(e_model, F("model", PK_STR));
SHAPE(e_rule, F("rule", PK_STR), F("allow", PK_BOOL));
SHAPE(e_job_started, F("jobId", PK_STR), F("command", PK_STR));
SHAPE(e_job_ended, F("jobId", PK_STR), F("exit", PK_ANY), FO("signal", PK_STR));
SHAPE(e_mcp_server, F("name", PK_STR), F("state", PK_STR), FO("reason", PK_STR), FA("tools", PK_STR, OPT, NULL));
SHAPE(p_plan_entry, F("content", PK_STR), F("status", PK_STR), F("priority", PK_STR));
SHAPE(e_compacted, F("id", PK_STR), F("summary", PK_STR), F("through", PK_COUNT),
    FA("plan", PK_OBJ, OPT, &p_plan_entry));
SHAPE(e_plan, FA("entries", PK_OBJ, REQ, &p_plan_entry));
SHAPE(e_roots, FA("directories", PK_STR, REQ, NULL));
SHAPE(e_compaction_failed, F("id", PK_STR), F("reason", PK_STR));
SHAPE(e_turn, F("turn", PK_COUNT));
SHAPE(e_step, F("turn", PK_COUNT), F("step", PK_COUNT));
SHAPE(e_user, F("id", PK_STR), FA("content", PK_OBJ, REQ, &p_user_block), FS("source", PK_OBJ, &p_source));
SHAPE(e_assistant, F("turn", PK_COUNT), F("step", PK_COUNT), F("id", PK_STR),
    FA("content", PK_OBJ, REQ, &p_assistant_block), F("finish", PK_STR), FO("usage", PK_OBJ));
SHAPE(e_tool_call, F("turn", PK_COUNT), F("step", PK_COUNT), F("callId", PK_STR), F("name", PK_STR),
    F("arguments", PK_STR), FO("title", PK_STR));
SHAPE(e_tool_result, F("turn", PK_COUNT), F("step", PK_COUNT), F("callId", PK_STR), F("name", PK_STR),
    FA("content", PK_OBJ, NONEMPTY, &p_result_block), F("isError", PK_BOOL), FO("output", PK_ANY),
    FSO("error", PK_OBJ, &p_code), FO("agentId", PK_STR), FO("linkedSessionId", PK_STR));
SHAPE(e_turn_end, F("turn", PK_COUNT), FS("reason", PK_OBJ, &p_reason));
SHAPE(e_descriptor, F("version", PK_INT), FO("label", PK_STR), FO("mode", PK_STR), FO("provider", PK_STR));
SHAPE(e_settled, F("epoch", PK_COUNT), F("end", PK_STR), FO("work", PK_STR));
SHAPE(e_wt_created, F("path", PK_STR), F("branch", PK_STR), F("base", PK_STR));
SHAPE(e_wt_committed, F("commit", PK_STR), F("files", PK_COUNT), F("insertions", PK_COUNT), F("deletions", PK_COUNT));
SHAPE(e_wt_removed, F("branchDeleted", PK_BOOL));
SHAPE(e_team_member, F("version", PK_INT), FS("member", PK_OBJ, &p_member));
SHAPE(e_team_task, F("version", PK_INT), FS("task", PK_OBJ, &p_task));
SHAPE(e_team_queued, F("version", PK_INT), FS("message", PK_OBJ, &p_message));
SHAPE(e_view, F("messageId", PK_STR), F("senderSessionId", PK_STR), FO("recipientSessionId", PK_STR),
    FO("senderMessageId", PK_STR), FO("recipientMessageId", PK_STR), FA("content", PK_OBJ, NONEMPTY, &p_user_block));
SHAPE(p_instr_file, F("path", PK_STR), F("bytes", PK_COUNT), F("sha256", PK_STR));
SHAPE(e_instructions, FA("files", PK_OBJ, REQ, &p_instr_file));
SHAPE(e_team_delivered, F("version", PK_INT), F("messageId", PK_STR), FO("targetName", PK_STR));

/* Each type's payload, by its code (session/evtype.h: the names and the order are there). */
static const struct pshape *const sess_payloads[SESS_EV_COUNT] = {
	[SESS_EV_CREATED] = &e_created, [SESS_EV_TURN_START] = &e_turn, [SESS_EV_USER_MESSAGE] = &e_user,
	[SESS_EV_STEP_START] = &e_step, [SESS_EV_STEP_END] = &e_step, [SESS_EV_ASSISTANT_MESSAGE] = &e_assistant,
	[SESS_EV_TOOL_CALL] = &e_tool_call, [SESS_EV_TOOL_RESULT] = &e_tool_result, [SESS_EV_TURN_END] = &e_turn_end,
	[SESS_EV_SUBAGENT_DESCRIPTOR] = &e_descriptor, [SESS_EV_SUBAGENT_SETTLED] = &e_settled,
	[SESS_EV_TEAM_MEMBER] = &e_team_member, [SESS_EV_TEAM_TASK] = &e_team_task,
	[SESS_EV_TEAM_QUEUED] = &e_team_queued, [SESS_EV_TEAM_DELIVERED] = &e_team_delivered,
	[SESS_EV_SESSION_MODE] = &e_mode, [SESS_EV_SESSION_MODEL] = &e_model, [SESS_EV_PERMISSION_RULE] = &e_rule,
	[SESS_EV_JOB_STARTED] = &e_job_started, [SESS_EV_JOB_ENDED] = &e_job_ended, [SESS_EV_MCP_SERVER] = &e_mcp_server,
	[SESS_EV_COMPACTED] = &e_compacted, [SESS_EV_COMPACTION_FAILED] = &e_compaction_failed,
	[SESS_EV_MESSAGE_VIEW] = &e_view, [SESS_EV_CONTEXT_INSTRUCTIONS] = &e_instructions,
	[SESS_EV_WORKTREE_CREATED] = &e_wt_created, [SESS_EV_WORKTREE_COMMITTED] = &e_wt_committed,
	[SESS_EV_WORKTREE_REMOVED] = &e_wt_removed, [SESS_EV_PLAN_UPDATED] = &e_plan,
	[SESS_EV_SESSION_ROOTS] = &e_roots,
};

static const struct {
	const char *name;
	size_t len;
} sess_ev_names[SESS_EV_COUNT] = {
	[SESS_EV_NONE] = { "", 0 },
#define SESS_EV_NAME(id, s) [SESS_EV_##id] = { s, sizeof(s) - 1 },
	SESS_EV_TABLE(SESS_EV_NAME)
#undef SESS_EV_NAME
};

enum sess_ev
sess_ev_ofn(const char *t, size_t n)
{
	for (int i = 1; i < SESS_EV_COUNT; i++)
		if (sess_ev_names[i].len == n && memcmp(t, sess_ev_names[i].name, n) == 0)
			return (enum sess_ev)i;
	return SESS_EV_NONE;
}

enum sess_ev
sess_ev_of(const char *t)
{
	return t ? sess_ev_ofn(t, strlen(t)) : SESS_EV_NONE;
}

const char *
sess_ev_name(enum sess_ev ev)
{
	return ev > SESS_EV_NONE && ev < SESS_EV_COUNT ? sess_ev_names[ev].name : "";
}

static const struct pshape *
sess_payload_shape(const char *t, size_t n)
{
	return sess_payloads[sess_ev_ofn(t, n)];
}

int
sess_payload_known(const char *t, size_t n)
{
	return sess_payload_shape(t, n) != NULL;
}

static const char *const sess_pk_names[] = { "", "a string", "an integer", "an integer from 0 to 2147483646",
	"a boolean", "an object", "an array", "a value" };

static int
sess_pk_is(unsigned kind, const json_t *v)
{
	switch (kind) {
	case PK_STR:
		return json_is_string(v);
	case PK_INT:
		return json_is_integer(v);
	case PK_COUNT:
		return json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < INT_MAX;
	case PK_BOOL:
		return json_is_boolean(v);
	case PK_OBJ:
		return json_is_object(v);
	case PK_ARR:
		return json_is_array(v);
	default:
		return v != NULL;
	}
}

/* The path of the field being checked, for the message: "content[2].text". */
struct sess_ppath {
	char s[160];
	size_t n;
};

/* Appends s[0..n) as far as it fits (this runs for every field of every event read: no printf). */
static void
sess_ppath_put(struct sess_ppath *p, const char *s, size_t n)
{
	if (n > sizeof(p->s) - 1 - p->n)
		n = sizeof(p->s) - 1 - p->n;
	memcpy(p->s + p->n, s, n);
	p->n += n;
	p->s[p->n] = '\0';
}

/* Appends ".name" (or "name" at the top); returns the length to pop back to. */
static size_t
sess_ppath_key(struct sess_ppath *p, const char *name)
{
	size_t was = p->n;

	if (p->n)
		sess_ppath_put(p, ".", 1);
	sess_ppath_put(p, name, strlen(name));
	return was;
}

static size_t
sess_ppath_index(struct sess_ppath *p, size_t i)
{
	size_t was = p->n;
	char d[24];
	size_t k = sizeof(d);

	d[--k] = ']';
	do
		d[--k] = (char)('0' + i % 10);
	while ((i /= 10) != 0);
	d[--k] = '[';
	sess_ppath_put(p, d + k, sizeof(d) - k);
	return was;
}

static void
sess_ppath_pop(struct sess_ppath *p, size_t was)
{
	p->n = was;
	p->s[was] = '\0';
}

static int sess_payload_object(const struct pshape *sh, const json_t *obj, struct sess_ppath *p,
    const char *type, long long seq, struct err *e);

static int
sess_payload_bad(struct sess_ppath *p, const char *type, long long seq, const char *what, struct err *e)
{
	return err_set(e, ERR_SESSION_CORRUPT, "event %lld (%s): %s %s", seq, type, p->s, what);
}

static int
sess_payload_fields(const struct pfield *f, const json_t *obj, struct sess_ppath *p, const char *type,
    long long seq, struct err *e)
{
	for (; f && f->name; f++) {
		const json_t *v = json_object_get(obj, f->name);
		size_t was = sess_ppath_key(p, f->name);
		int rc = 0;

		if (v == NULL) {
			if (!(f->flags & OPT))
				rc = sess_payload_bad(p, type, seq, "is missing", e);
		} else if (!sess_pk_is(f->kind, v)) {
			char what[40];
			snprintf(what, sizeof(what), "must be %s", sess_pk_names[f->kind]);
			rc = sess_payload_bad(p, type, seq, what, e);
		} else if (f->kind == PK_OBJ && f->sub) {
			rc = sess_payload_object(f->sub, v, p, type, seq, e);
		} else if (f->kind == PK_ARR) {
			size_t i;
			const json_t *el;
			if ((f->flags & NONEMPTY) && json_array_size(v) == 0)
				rc = sess_payload_bad(p, type, seq, "must not be empty", e);
			json_array_foreach(v, i, el) {
				size_t at;
				if (rc < 0)
					break;
				at = sess_ppath_index(p, i);
				if (!sess_pk_is(f->elem, el)) {
					char what[40];
					snprintf(what, sizeof(what), "must be %s", sess_pk_names[f->elem]);
					rc = sess_payload_bad(p, type, seq, what, e);
				} else if (f->elem == PK_OBJ && f->sub) {
					rc = sess_payload_object(f->sub, el, p, type, seq, e);
				}
				sess_ppath_pop(p, at);
			}
		}
		sess_ppath_pop(p, was);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int
sess_payload_object(const struct pshape *sh, const json_t *obj, struct sess_ppath *p, const char *type,
    long long seq, struct err *e)
{
	const char *t;

	if (sess_payload_fields(sh->fields, obj, p, type, seq, e) < 0)
		return -1;
	if (sh->variants == NULL)
		return 0;
	t = json_string_value(json_object_get(obj, "type"));	/* a string: the fields said so */
	for (const struct pvariant *v = sh->variants; v->type; v++)
		if (strcmp(v->type, t) == 0)
			return sess_payload_fields(v->shape->fields, obj, p, type, seq, e);
	if (sh->open)
		return 0;
	sess_ppath_key(p, "type");
	return sess_payload_bad(p, type, seq, "names no known block", e);
}

int
sess_payload_check(const char *type, const json_t *data, long long seq, struct err *e)
{
	const struct pshape *sh = sess_payload_shape(type, strlen(type));
	struct sess_ppath p = { .s = "", .n = 0 };

	if (sh == NULL)
		return 0;	/* unknown types are the envelope check's business */
	return sess_payload_object(sh, data, &p, type, seq, e);
}
