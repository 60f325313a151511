/* Delegation (docs/contract.md §6): notices, listing matrix, authority matrix, capacity, depth. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_def.h"
#include "session/store_def.h"	/* looks inside */	/* looks inside */
#include "agent/ask.h"
#include "agent/subagent.h"
#include "tests/helpers.h"
#include "tools/tools.h"
#include "base/buf.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "tools/toolsets.h"

static struct test_runtime T;
static struct toolbox tb;

/* Every agent hangs on its first request: children stay running (resident). */
static const char hang_all[] = "{\"version\":1,\"scripts\":["
    "{\"agent\":\"root\",\"replies\":[{\"hang\":true}]},{\"agent\":\"root\",\"replies\":[{\"hang\":true}]},"
    "{\"agent\":\"label:a\",\"replies\":[{\"hang\":true}]},{\"agent\":\"label:b\",\"replies\":[{\"hang\":true}]},"
    "{\"agent\":\"label:g\",\"replies\":[{\"hang\":true}]},{\"agent\":\"label:x\",\"replies\":[{\"hang\":true}]}]}";

static void
start(const char *recording)
{
	test_runtime_start(&T, recording);
	toolbox_init(&tb);
	toolsets_build(&tb, toolsets_profile("default", 0));
	agent_rt_set_exts(&T.rt, toolsets_profile("default", 0)->exts);
}

/* Runs the subagent tool as parent's call inv. */
static int
run_subagent(struct tool_inv *inv, const char *label, int background, struct tool_result *r)
{
	json_t *args = xjson_pack("{s:s, s:s, s:b}", "description", label, "prompt", "task",
	    "run_in_background", background);
	int rc;

	inv->tool = &tool_subagent;
	rc = tool_subagent.run(inv, args, r);
	json_decref(args);
	return rc;
}

static void
finish(void)
{
	test_runtime_finish(&T);
	toolbox_free(&tb);
}

/* Starts a background (or foreground) child of parent with label; returns it. */
static struct agent *
spawn(struct agent *parent, const char *label, int background, struct tool_result *r)
{
	static struct tool_inv invs[16];
	static int ninv;
	struct tool_inv *inv = &invs[ninv++ % 16];
	struct tool_result local = { 0 };
	int rc;

	memset(inv, 0, sizeof(*inv));
	inv->agent = parent;
	inv->call_id = (char *)"c";
	rc = run_subagent(inv, label, background, r ? r : &local);
	if (rc == TOOL_PENDING)
		return inv->state;
	if ((r ? r : &local)->error_code) {
		if (!r)
			tool_result_clear(&local);
		return NULL;
	}
	struct agent *child = agent_rt_get(&T.rt, json_string_value(json_object_get((r ? r : &local)->output,
	    "subagentId")));
	if (!r)
		tool_result_clear(&local);
	return child;
}

START_TEST(notice_wording_for_every_end)
{
	static const char *const ends[][2] = {
		{ "completed", "finished and will do no further work unless you send it more." },
		{ "aborted", "was stopped before it finished." },
		{ "max-tokens", "ran out of room before it finished." },
		{ "refusal", "declined the task." },
		{ "error", "failed before it finished." },
	};
	char want[400];

	for (size_t i = 0; i < 5; i++) {
		char *t = subagent_notice_text("X", ends[i][0], "closing words", NULL);
		snprintf(want, sizeof(want), "Background subagent X %s\nIts closing message:\nclosing words", ends[i][1]);
		ck_assert_str_eq(t, want);
		free(t);
	}
	char *t = subagent_notice_text("X", "completed", NULL, NULL);
	ck_assert_str_eq(t, "Background subagent X finished and will do no further work unless you send it "
	    "more.\nIt left no closing message.");
	free(t);
	t = subagent_return_guidance("P");
	ck_assert_str_eq(t, "Your parent agent id is \"P\". Before you finish, send your result to that agent "
	    "with send_message({ agent_id: \"P\", message: \"<self-contained result>\" }). The parent shares "
	    "your workspace but does not automatically receive your transcript, tool output, or reasoning. "
	    "Send earlier messages as well when a finding changes what the parent should do next; sending a "
	    "message does not end your turn.");
	free(t);
}
END_TEST

START_TEST(render_forms)
{
	json_t *c = json_pack("[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s}]", "kind", "child", "id", "A", "label",
	    "lbl", "status", "running", "kind", "diagnostic", "id", "B", "reason", "corrupt");
	json_t *d = json_pack("[{s:s, s:s, s:s, s:s, s:s, s:i}, {s:s, s:s, s:s, s:s, s:i}]", "kind", "child",
	    "id", "A", "label", "lbl", "status", "inactive", "parent", "P", "depth", 2, "kind", "diagnostic", "id",
	    "B", "reason", "unavailable", "parent", "P", "depth", 1);
	json_t *none = json_array();
	char *t;

	t = list_agents_render(c, 0);
	ck_assert_str_eq(t, "A [running] \xe2\x80\x94 lbl\nB [diagnostic: corrupt]");
	free(t);
	t = list_agents_render(d, 1);
	ck_assert_str_eq(t, "A [inactive] parent=P depth=2 \xe2\x80\x94 lbl\nB [diagnostic: unavailable] parent=P depth=1");
	free(t);
	t = list_agents_render(none, 0);
	ck_assert_str_eq(t, "(no subagents)");
	free(t);
	json_decref(c);
	json_decref(d);
	json_decref(none);
}
END_TEST

static void
put(const char *id, const char *text)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", T.state, id);
	test_write_file(path, text, strlen(text));
}

#define ROOT "00000000-0000-4000-8000-0000000000f0"
#define CH(n) "00000000-0000-4000-8000-0000000000f" #n
#define HDR(id, parent, t, extra) "{\"type\":\"session\",\"version\":1,\"id\":\"" id "\",\"createdAt\":" #t \
	",\"cwd\":\"/w\",\"delegationDepth\":1,\"parentSession\":\"" parent "\"" extra "}\n"
#define DESC(mode, label) "{\"seq\":0,\"time\":1,\"type\":\"subagent/descriptor\",\"data\":{\"version\":2,\"mode\":\"" mode "\",\"provider\":\"in-process\",\"label\":\"" label "\"}}\n"

/* docs/contract.md §6.6 and §24: a parent's load settles a continuable child a crash cut off (its
 * turn left open), and an isolated one that never settled; a child without a worktree whose turn
 * ended is not cut off, even though its descriptor says "isolation": null. */
START_TEST(load_settles_only_what_a_crash_cut_off)
{
	struct err e;
	char path[256], *log;

	start(hang_all);
	put(ROOT, "{\"type\":\"session\",\"version\":1,\"id\":\"" ROOT "\",\"createdAt\":1,\"cwd\":\"/w\",\"delegationDepth\":0}\n");
	put(CH(1), HDR(CH(1), ROOT, 5, ",\"origin\":\"subagent\"")
	    "{\"seq\":0,\"time\":1,\"type\":\"subagent/descriptor\",\"data\":{\"version\":2,\"mode\":\"continuable\","
	    "\"provider\":\"in-process\",\"label\":\"ended\",\"isolation\":null}}\n"
	    "{\"seq\":1,\"time\":2,\"type\":\"turn/start\",\"data\":{\"turn\":1}}\n"
	    "{\"seq\":2,\"time\":3,\"type\":\"turn/end\",\"data\":{\"turn\":1,\"reason\":{\"kind\":\"completed\"}}}\n");
	put(CH(2), HDR(CH(2), ROOT, 6, ",\"origin\":\"subagent\"") DESC("continuable", "cut")
	    "{\"seq\":1,\"time\":2,\"type\":\"turn/start\",\"data\":{\"turn\":1}}\n");
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_scan(&T.corpus, &e), 0);
	struct agent *root = agent_load(&T.rt, ROOT, &tb, NULL, &e);
	ck_assert_msg(root != NULL, "%s", e.msg);
	agent_rt_recover(root);
	runq_drain(&T.q);
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", T.state, CH(2));
	log = test_read_file(path, NULL);
	ck_assert_msg(strstr(log, "\"type\":\"subagent/settled\"") != NULL, "%s", log);	/* cut off: settled */
	free(log);
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", T.state, CH(1));
	log = test_read_file(path, NULL);
	ck_assert_msg(strstr(log, "subagent/settled") == NULL, "%s", log);	/* ended, not isolated: left */
	free(log);
	finish();
}
END_TEST

START_TEST(listing_matrix_with_unavailable_and_retry)
{
	struct err e;
	json_t *l;
	char path[256];

	start(hang_all);
	put(ROOT, "{\"type\":\"session\",\"version\":1,\"id\":\"" ROOT "\",\"createdAt\":1,\"cwd\":\"/w\",\"delegationDepth\":0}\n");
	put(CH(1), HDR(CH(1), ROOT, 5, ",\"origin\":\"subagent\"") DESC("continuable", "one"));
	put(CH(2), HDR(CH(2), ROOT, 5, ",\"origin\":\"subagent\"") DESC("one-shot", "shot"));
	put(CH(3), HDR(CH(3), CH(2), 6, ",\"origin\":\"subagent\"") DESC("continuable", "grandchild"));
	put(CH(4), HDR(CH(4), ROOT, 7, "") );			/* ordinary: never listed */
	put(CH(5), HDR(CH(5), CH(4), 8, ",\"origin\":\"subagent\"") DESC("continuable", "below ordinary"));
	put(CH(6), HDR(CH(6), ROOT, 9, ",\"origin\":\"subagent\"") DESC("continuable", "goes away"));
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_scan(&T.corpus, &e), 0);
	l = subagent_list_raw(&T.rt, ROOT, 0, &e);
	ck_assert_uint_eq(json_array_size(l), 3);	/* one, shot, goes away */
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 1), "mode")), "one-shot");
	ck_assert(json_is_true(json_object_get(json_array_get(l, 1), "has_children")));
	json_decref(l);
	/* The file becomes unreadable: a diagnostic, siblings still listed. */
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", T.state, CH(6));
	unlink(path);
	mkdir(path, 0700);
	l = subagent_list_raw(&T.rt, ROOT, 0, &e);
	ck_assert_uint_eq(json_array_size(l), 3);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 2), "reason")), "unavailable");
	json_decref(l);
	/* Retried on the next listing. */
	rmdir(path);
	put(CH(6), HDR(CH(6), ROOT, 9, ",\"origin\":\"subagent\"") DESC("continuable", "goes away") "\n");
	l = subagent_list_raw(&T.rt, ROOT, 0, &e);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 2), "kind")), "child");
	json_decref(l);
	/* Descendants: pre-order through one-shot and ordinary intermediates. */
	l = subagent_list_raw(&T.rt, ROOT, 1, &e);
	ck_assert_uint_eq(json_array_size(l), 5);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 2), "id")), CH(3));
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(l, 2), "depth")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 2), "parent")), CH(2));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 3), "id")), CH(5));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 3), "parent")), CH(4));
	json_decref(l);
	finish();
}
END_TEST

START_TEST(listing_survives_a_lineage_cycle)
{
	struct err e;
	json_t *l;

	start(hang_all);
	put(CH(1), HDR(CH(1), CH(2), 5, ",\"origin\":\"subagent\"") DESC("continuable", "a"));
	put(CH(2), HDR(CH(2), CH(1), 6, ",\"origin\":\"subagent\"") DESC("continuable", "b"));
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_scan(&T.corpus, &e), 0);
	l = subagent_list_raw(&T.rt, CH(1), 1, &e);
	ck_assert_uint_le(json_array_size(l), 2);
	json_decref(l);
	finish();
}
END_TEST

START_TEST(listing_omits_a_live_child_in_its_creation_window)
{
	struct err e;
	json_t *l;

	start(hang_all);
	struct agent *root = agent_new_root(&T.rt, "/w", &tb, NULL);
	struct agent *child = agent_new_child(&T.rt, root, &tb, NULL, NULL);
	err_clear(&e);
	ck_assert_ptr_nonnull(sess_append(child->sess, "turn/start", json_pack("{s:i}", "turn", 1), &e));
	l = subagent_list_raw(&T.rt, agent_id(root), 0, &e);
	ck_assert_uint_eq(json_array_size(l), 0);
	json_decref(l);
	finish();
}
END_TEST

START_TEST(send_authority_matrix)
{
	struct err e;
	char mid[64];

	start(hang_all);
	struct agent *root = agent_new_root(&T.rt, "/w", &tb, NULL);
	struct agent *other = agent_new_root(&T.rt, "/w", &tb, NULL);
	struct agent *a = spawn(root, "a", 1, NULL);
	struct agent *b = spawn(root, "b", 1, NULL);
	runq_drain(&T.q);
	struct agent *g = spawn(a, "g", 1, NULL);
	struct agent *x = spawn(other, "x", 1, NULL);
	runq_drain(&T.q);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(g);
	/* direct child: delivered */
	err_clear(&e);
	ck_assert_int_eq(subagent_send(root, agent_id(a), "hi", mid, &e), 0);
	/* grandchild, sibling, stranger: belongs to another parent */
	err_clear(&e);
	ck_assert_int_eq(subagent_send(root, agent_id(g), "hi", mid, &e), -1);
	ck_assert_int_eq(e.code, ERR_UNAUTHORIZED);
	err_clear(&e);
	ck_assert_int_eq(subagent_send(a, agent_id(b), "hi", mid, &e), -1);
	ck_assert_int_eq(e.code, ERR_UNAUTHORIZED);
	err_clear(&e);
	ck_assert_int_eq(subagent_send(root, agent_id(x), "hi", mid, &e), -1);
	ck_assert_int_eq(e.code, ERR_UNAUTHORIZED);
	char want[200];
	snprintf(want, sizeof(want), "subagent \"%s\" belongs to another parent session", agent_id(x));
	ck_assert_str_eq(e.msg, want);
	/* a resident continuable child to its parent: delivered */
	err_clear(&e);
	ck_assert_int_eq(subagent_send(a, agent_id(root), "report", mid, &e), 0);
	/* unknown and malformed ids */
	err_clear(&e);
	ck_assert_int_eq(subagent_send(root, "00000000-0000-4000-8000-0000000dead0", "x", mid, &e), -1);
	ck_assert_int_eq(e.code, ERR_NOT_RESUMABLE);
	ck_assert_str_eq(e.msg, "subagent \"00000000-0000-4000-8000-0000000dead0\" is unavailable");
	err_clear(&e);
	ck_assert_int_eq(subagent_send(root, "../etc", "x", mid, &e), -1);
	ck_assert_int_eq(e.code, ERR_INVALID_ARGUMENT);
	finish();
}
END_TEST

START_TEST(send_to_parent_from_one_shot_or_without_live_parent)
{
	struct err e;
	char mid[64], want[300];

	start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"hang\":true}]},"
	    "{\"agent\":\"label:fg\",\"replies\":[{\"hang\":true}]},{\"agent\":\"label:bg\",\"replies\":[{\"hang\":true}]}]}");
	struct agent *root = agent_new_root(&T.rt, "/w", &tb, NULL);
	struct agent *fg = spawn(root, "fg", 0, NULL);
	struct agent *bg = spawn(root, "bg", 1, NULL);
	runq_drain(&T.q);
	ck_assert_ptr_nonnull(fg);
	err_clear(&e);
	ck_assert_int_eq(subagent_send(fg, agent_id(root), "x", mid, &e), -1);
	ck_assert_int_eq(e.code, ERR_UNAUTHORIZED);
	snprintf(want, sizeof(want), "agent \"%s\" is not a resident continuable child and cannot send to parent \"%s\"",
	    agent_id(fg), agent_id(root));
	ck_assert_str_eq(e.msg, want);
	/* A one-shot child is never resumable by send_message. */
	err_clear(&e);
	ck_assert_int_eq(subagent_send(root, agent_id(fg), "x", mid, &e), -1);
	ck_assert_int_eq(e.code, ERR_NOT_RESUMABLE);
	agent_release(root);
	err_clear(&e);
	ck_assert_int_eq(subagent_send(bg, json_string_value(json_object_get(bg->sess->header, "parentSession")), "x",
	    mid, &e), -1);
	ck_assert_int_eq(e.code, ERR_PARENT_UNAVAILABLE);
	ck_assert_str_eq(e.msg, "direct parent is not live; the message was not delivered");
	finish();
}
END_TEST

/* What a send that waited for its target's log got. */
struct sent {
	int calls;
	char mid[64];
	struct err e;
};

static void
on_sent(void *arg, const char *target, const char *message_id, const struct err *e)
{
	struct sent *s = arg;

	ck_assert_int_eq((int)strlen(target), 36);
	s->calls++;
	snprintf(s->mid, sizeof(s->mid), "%s", message_id ? message_id : "");
	s->e = *e;
}

/* Whether the stored log of child id holds text. */
static int
child_log_has(const char *id, const char *text)
{
	char path[256], *log;
	int has;

	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", T.state, id);
	ck_assert_ptr_nonnull(log = test_read_file(path, NULL));
	has = strstr(log, text) != NULL;
	free(log);
	return has;
}

/*
 * A message to a stored child whose log is big waits while the log is read off the loop (issue
 * 15); cancelled meanwhile, it delivers nothing and lets the log go, so the next one gets
 * through. Anything but a cold resume is answered at once, with the synchronous errors.
 */
START_TEST(send_to_a_cold_child_waits_for_its_log_off_the_loop)
{
	struct subagent_sending *pending;
	struct sent got;
	struct err e;
	char mid[64], cid[40];

	start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"hang\":true}]},"
	    "{\"agent\":\"label:c\",\"replies\":[{\"text\":\"first\"},{\"expect\":\"second try\",\"text\":\"got it\"},{\"expect\":\"third try\",\"text\":\"again\"},{\"expect\":\"fourth try\",\"text\":\"small\"}]},"
	    "{\"agent\":\"label:d\",\"replies\":[{\"hang\":true}]}]}");
	struct agent *root = agent_new_root(&T.rt, "/w", &tb, NULL);
	struct agent *c = spawn(root, "c", 1, NULL);
	ck_assert_ptr_nonnull(c);
	snprintf(cid, sizeof(cid), "%s", agent_id(c));
	runq_drain(&T.q);
	if ((c = agent_rt_get(&T.rt, cid)) != NULL)
		agent_release(c);	/* stored, not live: a message resumes it from its log */
	runq_drain(&T.q);
	ck_assert_ptr_null(agent_rt_get(&T.rt, cid));
	T.rt.resume_offload_min = 1;	/* every log is big */

	/* cancelled while the log is read: nothing delivered, the log let go */
	memset(&got, 0, sizeof(got));
	err_clear(&e);
	ck_assert_msg(subagent_send_begin(root, cid, "first try", mid, on_sent, &got, &pending, &e) == 1, "%s", e.msg);
	ck_assert_ptr_nonnull(pending);
	subagent_send_cancel(pending);
	runq_drain(&T.q);
	ck_assert_int_eq(got.calls, 0);
	ck_assert_ptr_null(agent_rt_get(&T.rt, cid));

	/* the next one waits, then is delivered: the child is live and answers it */
	err_clear(&e);
	ck_assert_int_eq(subagent_send_begin(root, cid, "second try", mid, on_sent, &got, &pending, &e), 1);
	ck_assert_ptr_null(agent_rt_get(&T.rt, cid));	/* not before the read is done */
	runq_drain(&T.q);
	ck_assert_int_eq(got.calls, 1);
	ck_assert_int_eq(got.e.code, ERR_NONE);
	ck_assert_int_eq((int)strlen(got.mid), 36);
	runq_drain(&T.q);
	/* the child took it and answered (then settled and went, as before) */
	ck_assert(!child_log_has(cid, "first try"));
	ck_assert(child_log_has(cid, "second try"));
	ck_assert(child_log_has(cid, "\"got it\""));
	/* the send_message tool: pending, then completed with the delivery; or cancelled: never */
	{
		struct tool_inv inv;
		struct tool_result r = { 0 };
		json_t *args = xjson_pack("{s:s, s:s}", "agent_id", cid, "message", "third try");
		memset(&inv, 0, sizeof(inv));
		inv.agent = root;
		inv.tool = &tool_send_message;
		inv.call_id = (char *)"s1";
		ck_assert_int_eq(tool_send_message.run(&inv, args, &r), TOOL_PENDING);
		ck_assert(inv.cancel != NULL);
		inv.cancel(&inv);
		runq_drain(&T.q);
		ck_assert(!inv.done);
		memset(&inv, 0, sizeof(inv));
		inv.agent = root;
		inv.tool = &tool_send_message;
		inv.call_id = (char *)"s2";
		ck_assert_int_eq(tool_send_message.run(&inv, args, &r), TOOL_PENDING);
		runq_drain(&T.q);
		ck_assert(inv.done);
		ck_assert_int_eq(inv.result.error_code, ERR_NONE);
		char want[120];
		snprintf(want, sizeof(want), "message delivered to agent %s", cid);
		ck_assert_str_eq(inv.result.text, want);
		ck_assert_str_eq(inv.result.agent_id, cid);
		tool_result_clear(&inv.result);
		json_decref(args);
	}
	/* a log under the size: read on the loop, delivered at once */
	runq_drain(&T.q);
	ck_assert_ptr_null(agent_rt_get(&T.rt, cid));
	T.rt.resume_offload_min = 1LL << 40;
	err_clear(&e);
	ck_assert_int_eq(subagent_send_begin(root, cid, "fourth try", mid, on_sent, &got, &pending, &e), 0);
	ck_assert_ptr_null(pending);
	ck_assert_int_eq((int)strlen(mid), 36);
	ck_assert_ptr_nonnull(agent_rt_get(&T.rt, cid));
	runq_drain(&T.q);
	ck_assert(child_log_has(cid, "\"small\""));
	/* a live child: at once */
	c = spawn(root, "d", 1, NULL);
	ck_assert_ptr_nonnull(c);
	err_clear(&e);
	ck_assert_int_eq(subagent_send_begin(root, agent_id(c), "now", mid, on_sent, &got, &pending, &e), 0);
	ck_assert_ptr_null(pending);
	/* an unknown child: the synchronous error, at once */
	err_clear(&e);
	ck_assert_int_eq(subagent_send_begin(root, "00000000-0000-4000-8000-0000000dead0", "x", mid, on_sent, &got,
	    &pending, &e), -1);
	ck_assert_int_eq(e.code, ERR_NOT_RESUMABLE);
	ck_assert_int_eq(got.calls, 1);
	finish();
}
END_TEST

START_TEST(interrupt_authority_matrix)
{
	struct err e;
	char want[300];

	start(hang_all);
	struct agent *root = agent_new_root(&T.rt, "/w", &tb, NULL);
	struct agent *other = agent_new_root(&T.rt, "/w", &tb, NULL);
	struct agent *a = spawn(root, "a", 1, NULL);
	runq_drain(&T.q);
	struct agent *g = spawn(a, "g", 1, NULL);
	struct agent *x = spawn(other, "x", 1, NULL);
	runq_drain(&T.q);
	err_clear(&e);
	ck_assert_int_eq(subagent_interrupt(root, agent_id(root), &e), -1);
	snprintf(want, sizeof(want), "agent \"%s\" cannot interrupt itself", agent_id(root));
	ck_assert_str_eq(e.msg, want);
	err_clear(&e);
	ck_assert_int_eq(subagent_interrupt(root, agent_id(x), &e), -1);
	ck_assert_int_eq(e.code, ERR_UNAUTHORIZED);
	snprintf(want, sizeof(want), "subagent \"%s\" is not a live descendant of agent \"%s\"", agent_id(x),
	    agent_id(root));
	ck_assert_str_eq(e.msg, want);
	/* A deeper descendant may be interrupted; its turn ends aborted with cause parent. */
	err_clear(&e);
	ck_assert_int_eq(subagent_interrupt(root, agent_id(g), &e), 0);
	ck_assert_int_eq(g->status, AGENT_IDLE);
	json_t *last = sess_event_get(g->sess, g->sess->nev - 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(last, "data"), "reason"),
	    "cause")), "parent");
	json_decref(last);
	/* Its parent keeps running. */
	ck_assert_int_eq(a->status, AGENT_RUNNING);
	/* Not resident: an accepted no-op. */
	err_clear(&e);
	ck_assert_int_eq(subagent_interrupt(root, "00000000-0000-4000-8000-0000000dead0", &e), 0);
	finish();
}
END_TEST

START_TEST(interrupt_a_resident_root_is_unauthorized)
{
	struct err e;
	char want[300];

	start(hang_all);
	struct agent *root = agent_new_root(&T.rt, "/w", &tb, NULL);
	struct agent *other = agent_new_root(&T.rt, "/w", &tb, NULL);	/* another ACP session, same process */
	struct agent *a = spawn(root, "a", 1, NULL);
	agent_post(other, json_pack("[{s:s, s:s}]", "type", "text", "text", "work"),
	    json_pack("{s:s}", "kind", "user"), NULL);
	runq_drain(&T.q);
	ck_assert_int_eq(other->status, AGENT_RUNNING);
	/* The root of another tree: resident, not a descendant. */
	err_clear(&e);
	ck_assert_int_eq(subagent_interrupt(root, agent_id(other), &e), -1);
	ck_assert_int_eq(e.code, ERR_UNAUTHORIZED);
	snprintf(want, sizeof(want), "subagent \"%s\" is not a live descendant of agent \"%s\"", agent_id(other),
	    agent_id(root));
	ck_assert_str_eq(e.msg, want);
	ck_assert_int_eq(other->status, AGENT_RUNNING);
	/* A child's own root: an ancestor, not a descendant. */
	err_clear(&e);
	ck_assert_int_eq(subagent_interrupt(a, agent_id(root), &e), -1);
	ck_assert_int_eq(e.code, ERR_UNAUTHORIZED);
	finish();
}
END_TEST

START_TEST(interrupt_authority_follows_any_depth_and_survives_a_cycle)
{
	static struct tool_inv invs[300];
	struct tool_result r = { 0 };
	struct err e;
	struct agent *root, *cur;
	size_t depth = 0;

	start(hang_all);
	T.rt.max_depth = 1000;
	root = cur = agent_new_root(&T.rt, "/w", &tb, NULL);
	/* 299 one-shot generations (they never count against capacity), then a continuable leaf. */
	for (; depth < 299; depth++) {
		invs[depth].agent = cur;
		invs[depth].call_id = (char *)"c";
		ck_assert_int_eq(run_subagent(&invs[depth], "a", 0, &r), TOOL_PENDING);
		cur = invs[depth].state;
	}
	struct agent *leaf = spawn(cur, "x", 1, NULL);
	ck_assert_ptr_nonnull(leaf);
	ck_assert_int_eq(json_integer_value(json_object_get(leaf->sess->header, "delegationDepth")), 300);
	err_clear(&e);
	ck_assert_msg(subagent_interrupt(root, agent_id(leaf), &e) == 0, "%s: %s", err_kind(e.code), e.msg);
	/* A damaged state directory whose parents go round in a circle: the walk still ends. */
#define CY1 "00000000-0000-4000-8000-00000000c1c1"	/* far above the ids generated here */
#define CY2 "00000000-0000-4000-8000-00000000c1c2"
	put(CY1, HDR(CY1, CY2, 5, ",\"origin\":\"subagent\"") DESC("continuable", "a"));
	put(CY2, HDR(CY2, CY1, 6, ",\"origin\":\"subagent\"") DESC("continuable", "b"));
	ck_assert_int_eq(sess_corpus_scan(&T.corpus, &e), 0);
	struct agent *looped = agent_load(&T.rt, CY1, &tb, NULL, &e);
	ck_assert_msg(looped != NULL, "%s", e.msg);
	err_clear(&e);
	ck_assert_int_eq(subagent_interrupt(root, CY1, &e), -1);
	ck_assert_int_eq(e.code, ERR_UNAUTHORIZED);
	err_clear(&e);
	ck_assert_int_eq(subagent_interrupt(looped, CY2, &e), 0);	/* not resident: a no-op */
	ck_assert_ptr_nonnull(spawn(looped, "g", 1, NULL));		/* its tree's capacity is counted */
	finish();
}
END_TEST

START_TEST(capacity_counts_resident_continuable_children_only)
{
	struct tool_result r = { 0 };

	start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"hang\":true}]},"
	    "{\"agent\":\"label:fg\",\"replies\":[{\"hang\":true}]},"
	    "{\"agent\":\"label:a\",\"replies\":[{\"text\":\"done\"}]},"
	    "{\"agent\":\"label:b\",\"replies\":[{\"hang\":true}]}]}");
	T.rt.max_active = 1;
	struct agent *root = agent_new_root(&T.rt, "/w", &tb, NULL);
	ck_assert_ptr_nonnull(spawn(root, "fg", 0, NULL));	/* one-shot: does not count */
	ck_assert_ptr_nonnull(spawn(root, "a", 1, NULL));
	ck_assert_ptr_null(spawn(root, "b", 1, &r));
	ck_assert_int_eq(r.error_code, ERR_ACTIVATION_LIMIT_REACHED);
	ck_assert_ptr_nonnull(strstr(r.text, "Error: subagent limit reached (active child limit: 1); wait for an "
	    "existing child to finish or complete this work with the current agents\nholding slots: "));
	ck_assert_ptr_nonnull(strstr(r.text, " (a)"));
	tool_result_clear(&r);
	runq_drain(&T.q);		/* a answers and settles: its slot frees */
	ck_assert_ptr_nonnull(spawn(root, "b", 1, NULL));
	finish();
}
END_TEST

START_TEST(depth_limit)
{
	struct tool_result r = { 0 };

	start(hang_all);
	T.rt.max_depth = 1;
	struct agent *root = agent_new_root(&T.rt, "/w", &tb, NULL);
	struct agent *a = spawn(root, "a", 1, NULL);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(json_integer_value(json_object_get(a->sess->header, "delegationDepth")), 1);
	ck_assert_ptr_null(spawn(a, "g", 1, &r));
	ck_assert_int_eq(r.error_code, ERR_DEPTH_EXCEEDED);
	ck_assert_str_eq(r.text, "Error: subagent depth 2 exceeds maxDepth 1");
	tool_result_clear(&r);
	finish();
}
END_TEST

/*
 * The model's listing reuses an entry's object while what it shows is unchanged (the memo kept
 * with the corpus): through relabelled, re-moded, corrupt, vanished, new and running children,
 * grandchildren and another caller, both scopes equal a fresh build, as text and as JSON.
 */
static char memo_dir[64];
static const char *const memo_root = "00000000-0000-4000-8000-100000000000";

static void
memo_put(int i, const char *mode, const char *label, int created, const char *parent)
{
	char path[512], id[40];
	FILE *f;

	snprintf(id, sizeof(id), "00000000-0000-4000-8000-2%011x", i);
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", memo_dir, id);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":%d,\"cwd\":\"/w\","
	    "\"delegationDepth\":1,\"parentSession\":\"%s\",\"origin\":\"subagent\"}\n", id, created, parent);
	if (mode)
		fprintf(f, "{\"seq\":0,\"time\":%d,\"type\":\"subagent/descriptor\",\"data\":{\"version\":2,"
		    "\"mode\":\"%s\",\"provider\":\"in-process\",\"label\":\"%s\"}}\n", created, mode, label);
	fclose(f);
}

/* The memo's listing of both scopes against a fresh one (the memo set aside meanwhile). */
static void
memo_cmp(struct agent *caller, struct sess_corpus *c, const char *what)
{
	struct err e;

	for (int d = 0; d < 2; d++) {
		json_t *a = subagent_list(caller, d, &e), *b;
		char *ta = list_agents_render(a, d), *tfresh, *ja = json_dumps(a, JSON_COMPACT), *jb;
		void *m = c->memo;
		void (*mf)(void *) = c->memo_free;

		c->memo = NULL;
		b = subagent_list(caller, d, &e);
		tfresh = list_agents_render(b, d);
		jb = json_dumps(b, JSON_COMPACT);
		if (c->memo_free)
			c->memo_free(c->memo);
		c->memo = m;
		c->memo_free = mf;
		ck_assert_msg(strcmp(ta, tfresh) == 0 && strcmp(ja, jb) == 0, "%s (descendants %d):\n%s\n---\n%s", what, d,
		    ja, jb);
		json_decref(a);
		json_decref(b);
		free(ta);
		free(tfresh);
		free(ja);
		free(jb);
	}
}

START_TEST(listing_memo_equals_a_fresh_build)
{
	struct sess_env env;
	struct sess_store store;
	struct sess_corpus corpus;
	struct agent_rt rt;
	struct runq q;
	struct err e;
	struct agent caller, live;
	struct sess sess;
	char path[512], mid[40];
	FILE *f;

	test_mkdtemp(memo_dir, sizeof(memo_dir));
	err_clear(&e);
	ck_assert_int_eq(sess_env_init(&env, memo_dir, SESS_SYNC_NONE, 0, NULL, &e), 0);
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", memo_dir, memo_root);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":1,\"cwd\":\"/w\",\"delegationDepth\":0}\n",
	    memo_root);
	fclose(f);
	for (int i = 0; i < 40; i++)
		memo_put(i, i % 7 == 3 ? "one-shot" : "continuable", "lbl", 10 + i, memo_root);
	snprintf(mid, sizeof(mid), "00000000-0000-4000-8000-2%011x", 3);
	for (int i = 40; i < 50; i++)
		memo_put(i, "continuable", "grand", 100 + i, mid);
	runq_init(&q, NULL);
	sess_store_init(&store, &env);
	sess_corpus_init(&corpus, &env);
	ck_assert_int_eq(sess_corpus_scan(&corpus, &e), 0);
	agent_rt_init(&rt, &q, &env, &store, &corpus, NULL);
	memset(&caller, 0, sizeof(caller));
	memset(&sess, 0, sizeof(sess));
	memset(&live, 0, sizeof(live));
	memcpy(sess.id, memo_root, sizeof(sess.id) - 1);
	caller.rt = &rt;
	caller.sess = &sess;
	memo_cmp(&caller, &corpus, "initial");
	memo_cmp(&caller, &corpus, "repeat");
	memo_put(5, "continuable", "relabelled", 15, memo_root);
	sess_corpus_get(&corpus, "00000000-0000-4000-8000-200000000005");
	memo_cmp(&caller, &corpus, "label change");
	memo_put(6, "one-shot", "lbl", 16, memo_root);
	memo_cmp(&caller, &corpus, "mode change");
	memo_put(7, NULL, NULL, 17, memo_root);
	memo_cmp(&caller, &corpus, "descriptor gone");
	for (int i = 8; i < 20; i++) {
		snprintf(path, sizeof(path), "%s/sessions/00000000-0000-4000-8000-2%011x.jsonl", memo_dir, i);
		unlink(path);
	}
	memo_cmp(&caller, &corpus, "12 gone in a row");
	memo_put(60, "continuable", "new early", 11, memo_root);
	memo_put(61, "continuable", "new late", 500, memo_root);
	memo_cmp(&caller, &corpus, "new children");
	memo_put(41, "continuable", "grand2", 141, mid);
	memo_cmp(&caller, &corpus, "grandchild label");
	live.status = AGENT_RUNNING;
	/* as agent_attach does: resident, and marked live in the corpus */
	map_put(&rt.agents, "00000000-0000-4000-8000-200000000001", &live);
	sess_corpus_get(&corpus, "00000000-0000-4000-8000-200000000001")->live = 1;
	memo_cmp(&caller, &corpus, "running");
	live.status = AGENT_IDLE;
	memo_cmp(&caller, &corpus, "idle again");
	map_del(&rt.agents, "00000000-0000-4000-8000-200000000001");
	sess_corpus_note_released(&corpus, "00000000-0000-4000-8000-200000000001");
	memo_cmp(&caller, &corpus, "not live");
	memcpy(sess.id, mid, sizeof(sess.id) - 1);
	memo_cmp(&caller, &corpus, "another caller");
	memcpy(sess.id, memo_root, sizeof(sess.id) - 1);
	memo_cmp(&caller, &corpus, "back to the root");
	agent_rt_free(&rt);
	sess_corpus_free(&corpus);
	sess_store_free(&store);
	sess_env_free(&env);
	test_rmtree(memo_dir);
}
END_TEST

/* Starts a child of parent as the subagent tool does with agent_type and model (NULL: absent). */
static struct agent *
spawn_kind(struct agent *parent, const char *label, int background, const char *type, const char *model,
    struct tool_result *r)
{
	static struct tool_inv invs[8];
	static int ninv;
	struct tool_inv *inv = &invs[ninv++ % 8];
	json_t *args = xjson_pack("{s:s, s:s, s:b}", "description", label, "prompt", "task", "run_in_background",
	    background);
	int rc;

	if (type)
		json_object_set_new(args, "agent_type", json_string(type));
	if (model)
		json_object_set_new(args, "model", json_string(model));
	memset(inv, 0, sizeof(*inv));
	inv->agent = parent;
	inv->call_id = (char *)"c";
	inv->tool = &tool_subagent;
	memset(r, 0, sizeof(*r));
	rc = tool_subagent.run(inv, args, r);
	json_decref(args);
	if (rc == TOOL_PENDING)
		return inv->state;
	if (r->error_code)
		return NULL;
	return agent_rt_get(&T.rt, json_string_value(json_object_get(r->output, "subagentId")));
}

/* The subagent tool's call with isolation (the call may stay pending: r is then filled when it
 * completes, through the call's completion). */
static struct tool_inv iso_inv;
static struct tool_result *iso_out;

static void
iso_done(struct tool_inv *inv)
{
	*iso_out = inv->result;
	memset(&inv->result, 0, sizeof(inv->result));
}

static struct agent *
spawn_kind_iso(struct agent *parent, const char *label, int background, const char *type, const char *isolation,
    struct tool_result *r)
{
	json_t *args = xjson_pack("{s:s, s:s, s:b}", "description", label, "prompt", "task", "run_in_background",
	    background);

	if (type)
		json_object_set_new(args, "agent_type", json_string(type));
	if (isolation)
		json_object_set_new(args, "isolation", json_string(isolation));
	int rc;

	memset(&iso_inv, 0, sizeof(iso_inv));
	iso_inv.agent = parent;
	iso_inv.call_id = (char *)"c";
	iso_inv.tool = &tool_subagent;
	iso_inv.on_done = iso_done;
	iso_out = r;
	memset(r, 0, sizeof(*r));
	rc = tool_subagent.run(&iso_inv, args, r);
	json_decref(args);
	ck_assert_int_eq(rc, TOOL_PENDING);
	return NULL;
}

/* The names of the tools a would be described, comma-separated (owned). */
static char *
tool_names(struct agent *a)
{
	json_t *d = agent_describe_tools(a), *t;
	struct buf b;
	size_t i;

	buf_init(&b);
	json_array_foreach(d, i, t)
		buf_printf(&b, "%s%s", i ? "," : "", json_string_value(json_object_get(t, "name")));
	json_decref(d);
	return b.data ? buf_steal(&b) : xstrdup("");
}

static void
type_put(const char *ws, const char *name, const char *text)
{
	char *p = xasprintf("%s/.acp-agent/agents/%s", ws, name);

	test_write_file(p, text, strlen(text));
	free(p);
}

/*
 * docs/contract.md §23.2/§23.3 end to end through the subagent tool: the types' list in its
 * description, the pinned errors, a typed child's tools, mode, model, steps and prompt, a
 * grandchild that cannot escape, the list's type, and a cold load rebuilt from the descriptor
 * after the type file is gone (a version 2 descriptor reads as general).
 */
START_TEST(typed_children_are_composed_from_their_type)
{
	char ws[64], *s;
	struct tool_result r;
	struct err e;

	test_mkdtemp(ws, sizeof(ws));
	s = xasprintf("mkdir -p %s/.acp-agent/agents", ws);
	ck_assert_int_eq(system(s), 0);
	free(s);
	type_put(ws, "narrow.md", "---\ndescription: Narrow helper\ntools: Task, Read, mcp__gh__*\n"
	    "disallowedTools: mcp__gh__delete*\npermissionMode: acceptEdits\nmaxTurns: 3\nmodel: m-typed\n---\nBe narrow.\n");
	type_put(ws, "iso.md", "---\ndescription: Isolated writer\nisolation: worktree\n---\n");
	test_runtime_start(&T, hang_all);
	toolbox_init(&tb);
	toolsets_build(&tb, toolsets_profile("default", 1));
	agent_rt_set_exts(&T.rt, toolsets_profile("default", 1)->exts);
	T.rt.start_mode = PERMIT_FULL_ACCESS;
	struct agent *root = agent_new_root(&T.rt, ws, &tb, NULL);

	/* the description lists the workspace's types in name order */
	json_t *d = agent_describe_tools(root);
	const char *desc = json_string_value(json_object_get(json_array_get(d, 0), "description"));
	ck_assert_ptr_nonnull(strstr(desc, "returns the result.\n\nAvailable agent types:\n- explore: Read-only agent "
	    "for finding"));
	ck_assert_ptr_nonnull(strstr(desc, "It cannot edit files, run commands or start agents.\n- general: "
	    "General-purpose agent for multi-step tasks: research, edits and commands. It has the same tools as "
	    "you.\n- iso: Isolated writer\n- narrow: Narrow helper"));
	json_decref(d);

	/* the pinned errors: no child is made */
	ck_assert_ptr_null(spawn_kind(root, "a", 1, "nope", NULL, &r));
	ck_assert_int_eq(r.error_code, ERR_INVALID_ARGUMENT);
	ck_assert_str_eq(r.text, "Error: unknown agent_type \"nope\"; available: explore, general, iso, narrow");
	tool_result_clear(&r);
	/* a type that asks for a worktree is never run unisolated: outside a repository, refused */
	spawn_kind_iso(root, "a", 1, "iso", NULL, &r);
	runq_drain(&T.q);
	ck_assert_int_eq(r.error_code, ERR_ISOLATION_UNAVAILABLE);
	tool_result_clear(&r);
	T.rt.models = "b-model,a-model";
	ck_assert_ptr_null(spawn_kind(root, "a", 1, NULL, "zzz", &r));
	ck_assert_str_eq(r.text, "Error: unknown model \"zzz\"; available: a-model, b-model");
	tool_result_clear(&r);
	ck_assert_ptr_null(spawn_kind(root, "a", 1, NULL, "a\x1b[2Jb", &r));
	ck_assert_int_eq(r.error_code, ERR_INVALID_ARGUMENT);
	tool_result_clear(&r);
	T.rt.models = NULL;
	ck_assert_uint_eq(T.rt.nall, 1);

	/* a typed child: its type's tools (Claude Code's names mapped), ceiling, steps, model, prompt */
	struct agent *a = spawn_kind(root, "a", 1, "narrow", NULL, &r);
	ck_assert_msg(a != NULL, "%s", r.text);
	tool_result_clear(&r);
	s = tool_names(a);
	ck_assert_str_eq(s, "subagent,send_message,read");
	free(s);
	ck_assert_ptr_null(agent_find_tool(a, "bash"));
	ck_assert_ptr_nonnull(agent_find_tool(a, "read"));
	ck_assert_int_eq(agent_mode(a), PERMIT_ACCEPT_EDITS);
	ck_assert_int_eq(agent_mode(root), PERMIT_FULL_ACCESS);
	ck_assert_int_eq(agent_max_steps(a), 3);
	ck_assert_str_eq(agent_model(a), "m-typed");
	s = agent_system_prompt(a);
	ck_assert_ptr_nonnull(strstr(s, "\n\nDelegation: use the subagent tool"));
	ck_assert_ptr_nonnull(strstr(s, "Finish your task and report back.\n\nBe narrow."));
	free(s);
	/* its grandchild asks for every tool and gets no more than its parent has, nor a laxer mode */
	struct agent *g = spawn_kind(a, "g", 1, "general", "m-call", &r);
	ck_assert_msg(g != NULL, "%s", r.text);
	tool_result_clear(&r);
	s = tool_names(g);
	ck_assert_str_eq(s, "subagent,send_message,read");
	free(s);
	ck_assert_int_eq(agent_mode(g), PERMIT_ACCEPT_EDITS);
	ck_assert_int_eq(agent_max_steps(g), T.rt.max_steps);
	ck_assert_str_eq(agent_model(g), "m-call");
	/* explore: read-only, no delegation section; one-shot: no send_message */
	struct agent *x = spawn_kind(root, "x", 0, "explore", NULL, &r);
	ck_assert_ptr_nonnull(x);
	s = tool_names(x);
	ck_assert_str_eq(s, "read,glob,grep,todo_write");
	free(s);
	ck_assert_int_eq(agent_mode(x), PERMIT_READ_ONLY);
	s = agent_system_prompt(x);
	ck_assert_ptr_null(strstr(s, "Delegation:"));
	ck_assert_ptr_nonnull(strstr(s, "You explore a codebase"));
	free(s);
	/* a background explore child keeps send_message, and is still not told to delegate */
	struct agent *xb = spawn_kind(root, "b", 1, "explore", NULL, &r);
	ck_assert_ptr_nonnull(xb);
	tool_result_clear(&r);
	s = tool_names(xb);
	ck_assert_str_eq(s, "send_message,read,glob,grep,todo_write");
	free(s);
	s = agent_system_prompt(xb);
	ck_assert_ptr_null(strstr(s, "Delegation:"));
	free(s);
	/* a NUL in a string argument is refused with the arguments (never read cut short) */
	err_clear(&e);
	ck_assert_ptr_null(toolbox_check_args(&tb, &tool_subagent, "{\"description\":\"a\",\"prompt\":\"b\","
	    "\"agent_type\":\"explore\\u0000x\"}", &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "invalid arguments: not valid JSON (\\u0000 is not allowed"));
	/* the title names a type that is not general */
	json_t *args = json_pack("{s:s, s:s}", "description", "find it", "agent_type", "explore");
	s = tool_subagent.title(&tool_subagent, args);
	ck_assert_str_eq(s, "Delegate (explore): find it");
	free(s);
	json_object_set_new(args, "agent_type", json_string("general"));
	s = tool_subagent.title(&tool_subagent, args);
	ck_assert_str_eq(s, "Delegate: find it");
	free(s);
	json_decref(args);

	/* the listing: the type, and the model when it is not the parent's */
	json_t *l = subagent_list(root, 0, &e);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 0), "agentType")), "narrow");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 0), "model")), "m-typed");
	s = list_agents_render(l, 0);
	ck_assert_msg(strstr(s, " \xe2\x80\x94 a (narrow)") != NULL, "%s", s);
	free(s);
	json_decref(l);

	/* the file goes; a cold load of the child rebuilds what the descriptor says */
	char id[SESS_ID_LEN + 1];
	snprintf(id, sizeof(id), "%s", agent_id(g));
	s = xasprintf("%s/.acp-agent/agents/narrow.md", ws);
	ck_assert_int_eq(unlink(s), 0);
	free(s);
	agent_release(g);
	runq_drain(&T.q);
	err_clear(&e);
	struct agent *back = agent_load(&T.rt, id, &tb, NULL, &e);
	ck_assert_msg(back != NULL, "%s", e.msg);
	s = tool_names(back);
	ck_assert_str_eq(s, "subagent,send_message,read");
	free(s);
	ck_assert_int_eq(agent_mode(back), PERMIT_ACCEPT_EDITS);
	ck_assert_str_eq(agent_model(back), "m-call");
	ck_assert_str_eq(agent_type_name(back), "general");

	/* a version 2 child: general, every tool; a descriptor that does not pass: nothing, read-only */
#define NONE "00000000-0000-4000-8000-00000000d4d4"
	put(NONE, HDR(NONE, "00000000-0000-4000-8000-00000000d1d1", 4, ",\"origin\":\"subagent\""));
	struct agent *none = agent_load(&T.rt, NONE, &tb, NULL, &e);
	ck_assert_ptr_nonnull(none);
	s = tool_names(none);
	ck_assert_str_eq(s, "");	/* a child with no descriptor is nothing until one says */
	free(s);
	ck_assert_int_eq(agent_mode(none), PERMIT_READ_ONLY);
#define V2 "00000000-0000-4000-8000-00000000d2d2"
#define BAD "00000000-0000-4000-8000-00000000d3d3"
	put(V2, HDR(V2, "00000000-0000-4000-8000-00000000d1d1", 5, ",\"origin\":\"subagent\"") DESC("continuable", "old"));
	put(BAD, HDR(BAD, "00000000-0000-4000-8000-00000000d1d1", 6, ",\"origin\":\"subagent\"")
	    "{\"seq\":0,\"time\":1,\"type\":\"subagent/descriptor\",\"data\":{\"version\":3,\"mode\":\"continuable\","
	    "\"label\":\"bad\",\"agentType\":\"general\",\"tools\":[\"bash\"],\"ceiling\":\"root\"}}\n");
	struct agent *old = agent_load(&T.rt, V2, &tb, NULL, &e);
	ck_assert_ptr_nonnull(old);
	ck_assert_str_eq(agent_type_name(old), "general");
	ck_assert_ptr_nonnull(agent_find_tool(old, "bash"));
	ck_assert_int_eq(agent_max_steps(old), T.rt.max_steps);
	test_log_capture_start();
	struct agent *bad = agent_load(&T.rt, BAD, &tb, NULL, &e);
	s = test_log_capture_stop();
	ck_assert_ptr_nonnull(bad);
	ck_assert_ptr_nonnull(strstr(s, "its descriptor does not pass its check (a bad ceiling): it runs with no tools, "
	    "read-only"));
	free(s);
	s = tool_names(bad);
	ck_assert_str_eq(s, "");
	free(s);
	ck_assert_int_eq(agent_mode(bad), PERMIT_READ_ONLY);
	finish();
	test_rmtree(ws);
}
END_TEST

/* The types of the events of a's log, space-separated (owned). */
static char *
event_types(struct agent *a)
{
	struct buf b;

	buf_init(&b);
	for (size_t i = 0; i < sess_nev(a->sess); i++) {
		json_t *ev = sess_event_get(a->sess, i);
		buf_printf(&b, "%s%s", i ? " " : "", json_string_value(json_object_get(ev, "type")));
		json_decref(ev);
	}
	return buf_steal(&b);
}

/* The data of the last event of type in a's log (new ref), or NULL. */
static json_t *
last_event(struct agent *a, const char *type)
{
	for (size_t i = sess_nev(a->sess); i-- > 0;) {
		json_t *ev = sess_event_get(a->sess, i);
		if (strcmp(json_string_value(json_object_get(ev, "type")), type) == 0) {
			json_t *d = json_incref(json_object_get(ev, "data"));
			json_decref(ev);
			return d;
		}
		json_decref(ev);
	}
	return NULL;
}

/* A repository at <dir>/repo with <sub>/main.c committed, the runtime started on rec with the
 * workspace tools, and a root working in <dir>/repo/<sub>; dir gets the test's directory. */
static struct agent *
iso_root(const char *rec, char *dir, size_t size, const char *sub)
{
	char *cmd, *ws;
	struct agent *root;

	test_mkdtemp(dir, size);
	cmd = xasprintf("mkdir -p %s/repo/%s && cd %s/repo && git init -q && printf 'x\\n' > %s/main.c && git add -A && "
	    "git -c user.name=t -c user.email=t@t commit -q -m first", dir, sub, dir, sub);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	ws = xasprintf("%s/repo/%s", dir, sub);
	test_runtime_start(&T, rec);
	toolbox_init(&tb);
	toolsets_build(&tb, toolsets_profile("default", 1));
	agent_rt_set_exts(&T.rt, toolsets_profile("default", 1)->exts);
	root = agent_new_root(&T.rt, ws, &tb, NULL);
	free(ws);
	return root;
}

/*
 * docs/contract.md §24 end to end in a real repository: a background child with isolation
 * worktree works in its own worktree (its edit does not ask, the user's files untouched), and
 * when it settles its work is committed to its branch, the worktree removed, and its parent's
 * notice says where the work is. Outside a repository: ISOLATION_UNAVAILABLE and no child.
 */
START_TEST(isolated_child_works_in_its_worktree)
{
	static const char rec[] = "{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"hang\":true}]},"
	    "{\"agent\":\"label:w\",\"replies\":[{\"tool_calls\":[{\"name\":\"write\",\"arguments\":{\"file_path\":"
	    "\"lib.c\",\"content\":\"int lib;\\n\"}}]},{\"text\":\"wrote lib.c\"},"
	    "{\"tool_calls\":[{\"name\":\"write\",\"arguments\":{\"file_path\":\"two.c\",\"content\":\"int two;\\n\"}}]},"
	    "{\"text\":\"wrote two.c\"}]},{\"agent\":\"label:n\",\"replies\":[{\"text\":\"nothing to do\"}]},"
	    "{\"agent\":\"label:f\",\"replies\":[{\"tool_calls\":[{\"name\":\"subagent\",\"arguments\":{\"description\":"
	    "\"g\",\"prompt\":\"p\"}}]},{\"expect\":\"cannot start background subagents\",\"text\":\"alone then\"}]}]}";
	char dir[64], *ws, *cmd, *s;
	struct tool_result r;
	struct agent *root = iso_root(rec, dir, sizeof(dir), "src");

	ws = xasprintf("%s/repo/src", dir);
	/* outside a repository: refused, nothing made */
	struct agent *other = agent_new_root(&T.rt, dir, &tb, NULL);
	spawn_kind_iso(other, "w", 1, NULL, "worktree", &r);
	runq_drain(&T.q);
	ck_assert_ptr_nonnull(strstr(r.text, "Error: worktree isolation needs a git repository: fatal: not a git repository"));
	tool_result_clear(&r);
	/* in the repository: the call is pending while the worktree is made, then the child runs */
	spawn_kind_iso(root, "w", 1, NULL, "worktree", &r);
	runq_drain(&T.q);
	ck_assert_msg(r.error_code == ERR_NONE && r.output, "%s", r.text ? r.text : "(pending)");
	char cid[SESS_ID_LEN + 1];
	snprintf(cid, sizeof(cid), "%s", json_string_value(json_object_get(r.output, "subagentId")));
	/* settled and gone: read back from its log */
	struct err le;
	err_clear(&le);
	ck_assert_ptr_null(agent_rt_get(&T.rt, cid));
	struct agent *w = agent_load(&T.rt, cid, &tb, NULL, &le);
	ck_assert_msg(w != NULL, "%s", le.msg);
	/* it wrote in its worktree, settled, and its work went to its branch */
	s = event_types(w);
	ck_assert_msg(strstr(s, "subagent/descriptor worktree/created ") == s, "%s", s);
	ck_assert_msg(strstr(s, "tool/result") && strstr(s, "worktree/committed worktree/removed subagent/settled"), "%s", s);
	free(s);
	json_t *c = last_event(w, "worktree/committed");
	ck_assert_int_eq(json_integer_value(json_object_get(c, "files")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(c, "insertions")), 1);
	ck_assert_uint_eq(json_string_length(json_object_get(c, "commit")), 40);
	json_decref(c);
	c = last_event(w, "worktree/removed");
	ck_assert(json_is_false(json_object_get(c, "branchDeleted")));
	json_decref(c);
	json_t *settled = last_event(w, "subagent/settled");
	char *want = xasprintf("Its work is on branch acp-agent/%.8s: 1 file(s) changed, +1 -0.", cid);
	ck_assert_str_eq(json_string_value(json_object_get(settled, "work")), want);
	json_decref(settled);
	/* the notice reached the root, with that line */
	s = event_types(root);
	ck_assert_ptr_nonnull(strstr(s, "user/message"));
	free(s);
	json_t *msg = last_event(root, "user/message");
	const char *text = json_string_value(json_object_get(json_array_get(json_object_get(msg, "content"), 0), "text"));
	ck_assert_msg(strstr(text, want) != NULL, "%s", text);
	json_decref(msg);
	/* the user's tree untouched; the worktree gone; the branch has the file */
	char *p = xasprintf("%s/lib.c", ws);
	ck_assert_int_ne(access(p, F_OK), 0);
	free(p);
	p = xasprintf("%s/worktrees/%s", T.state, cid);
	ck_assert_int_ne(access(p, F_OK), 0);
	free(p);
	cmd = xasprintf("cd %s/repo && git show acp-agent/%.8s:src/lib.c | grep -q 'int lib;'", dir, cid);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	free(want);
	/* a child that changed nothing: no commit, its branch deleted, listed with a null branch */
	struct tool_result rn;
	spawn_kind_iso(root, "n", 1, NULL, "worktree", &rn);
	runq_drain(&T.q);
	ck_assert_msg(rn.error_code == ERR_NONE, "%s", rn.text ? rn.text : "(pending)");
	/* a foreground isolated child: no background children (its worktree goes when its run ends);
	 * its result ends with the line about its work */
	struct tool_result rf;
	spawn_kind_iso(root, "f", 0, NULL, "worktree", &rf);
	runq_drain(&T.q);
	ck_assert_msg(rf.error_code == ERR_NONE && rf.text && strcmp(rf.text, "alone then\nIt changed no files.") == 0,
	    "%s", rf.text ? rf.text : "(pending)");
	tool_result_clear(&rf);
	/* the listing names the branch while it exists */
	json_t *l = subagent_list(root, 0, &le);
	size_t li;
	json_t *le2;
	int nulls = 0;
	json_array_foreach(l, li, le2)
		nulls += json_object_get(le2, "branch") != NULL && json_is_null(json_object_get(le2, "branch"));
	ck_assert_int_eq(nulls, 1);		/* n's (f is one-shot: not listed) */
	tool_result_clear(&rn);
	s = list_agents_render(l, 0);
	char *shown = xasprintf(" \xe2\x80\x94 w (branch acp-agent/%.8s)", cid);
	ck_assert_msg(strstr(s, shown) != NULL, "%s", s);
	free(shown);
	free(s);
	json_decref(l);
	/* a message to the settled child: its worktree comes back on its branch before it works,
	 * and its next settlement counts the whole branch */
	agent_release(w);
	runq_drain(&T.q);
	char mid[SESS_ID_LEN + 1];
	err_clear(&le);
	ck_assert_msg(subagent_send(root, cid, "one more file", mid, &le) == 0, "%s", le.msg);
	runq_drain(&T.q);
	w = agent_load(&T.rt, cid, &tb, NULL, &le);
	ck_assert_msg(w != NULL, "%s", le.msg);
	s = event_types(w);
	char *second = strstr(s, "worktree/created");
	ck_assert_ptr_nonnull(second);
	ck_assert_msg(strstr(second + 1, "worktree/created") != NULL, "%s", s);	/* added back */
	free(s);
	settled = last_event(w, "subagent/settled");
	want = xasprintf("Its work is on branch acp-agent/%.8s: 2 file(s) changed, +2 -0.", cid);
	ck_assert_str_eq(json_string_value(json_object_get(settled, "work")), want);
	json_decref(settled);
	free(want);
	p = xasprintf("%s/worktrees/%s", T.state, cid);
	ck_assert_int_ne(access(p, F_OK), 0);
	free(p);
	tool_result_clear(&r);
	free(ws);
	finish();
	test_rmtree(dir);
}
END_TEST

/* docs/contract.md §24: a worktree that cannot be made (the worktrees directory is a file: the
 * claim cannot be written) is ISOLATION_FAILED with the reason; a call cancelled before its
 * worktree's work ran leaves nothing: no child, no worktree, no claim, no branch, nothing
 * lingering. (Without a loop the work had not started: git stopped mid-way is check_git's.) */
START_TEST(isolated_call_cancelled_while_its_worktree_is_made)
{
	static const char rec[] = "{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"hang\":true}]},"
	    "{\"agent\":\"label:w\",\"replies\":[{\"text\":\"never\"}]}]}";
	char dir[64], *cmd, *path;
	struct tool_result r;
	struct agent *root = iso_root(rec, dir, sizeof(dir), ".");

	/* its claim cannot be written (the directory is a file): ISOLATION_FAILED naming it, nothing
	 * made, no branch */
	path = xasprintf("%s/worktrees", T.state);
	test_write_file(path, "x", 1);
	spawn_kind_iso(root, "w", 1, NULL, "worktree", &r);
	runq_drain(&T.q);
	ck_assert_int_eq(r.error_code, ERR_ISOLATION_FAILED);
	ck_assert_msg(r.text && strncmp(r.text, "Error: cannot write ", 20) == 0 && strstr(r.text, "Not a directory"),
	    "%s", r.text ? r.text : "(pending)");
	tool_result_clear(&r);
	cmd = xasprintf("cd %s/repo && test -z \"$(git branch --list 'acp-agent/*')\" && test -z \"$(git worktree list | sed 1d)\"",
	    dir);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	ck_assert_int_eq(unlink(path), 0);
	free(path);
	/* cancelled while it is made */
	spawn_kind_iso(root, "w", 1, NULL, "worktree", &r);
	ck_assert(iso_inv.cancel != NULL);
	iso_inv.cancel(&iso_inv);
	ck_assert_ptr_null(iso_inv.state);
	runq_drain(&T.q);
	ck_assert_ptr_null(r.text);		/* nothing is told to a call that went */
	for (size_t i = 0; i < T.rt.nall; i++)
		ck_assert_msg(T.rt.all[i] == root || T.rt.all[i]->released, "a child was made");
	ck_assert_int_eq(agent_rt_lingering(&T.rt), 0);
	cmd = xasprintf("ls -A %s/worktrees 2>/dev/null | wc -l", T.state);
	FILE *p = popen(cmd, "r");
	char line[64] = "";
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
	pclose(p);
	free(cmd);
	ck_assert_str_eq(line, "0\n");
	cmd = xasprintf("cd %s/repo && test -z \"$(git branch --list 'acp-agent/*')\"", dir);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	finish();
	test_rmtree(dir);
}
END_TEST

/* Shuts the runtime down once an agent is settling (its git work queued, here where offloads run
 * from the queue). It keeps a place among the tasks queued now, so it runs between the one that
 * starts the settlement and the settlement's work; with nothing else queued it waits for the
 * model's requests (after the sync). */
struct exit_poll {
	char id[SESS_ID_LEN + 1];
	int tries, fired;
};

static void
exit_when_finishing(void *arg)
{
	struct exit_poll *p = arg;

	for (size_t i = 0; i < T.rt.nall; i++) {
		struct agent *a = T.rt.all[i];
		if (!a->released && a->finishing) {
			snprintf(p->id, sizeof(p->id), "%s", agent_id(a));
			agent_rt_shutdown(&T.rt);
			p->fired = 1;
			return;
		}
	}
	if (++p->tries == 100000)
		return;
	if (T.q.head != NULL)
		runq_push(&T.q, exit_when_finishing, p);
	else
		runq_push_after_sync(&T.q, exit_when_finishing, p);
}

/* docs/contract.md §24: a process asked to exit while an isolated child's work is committed waits
 * for it, and logs it: the worktree events and the settlement (whose notice the parent's next load
 * delivers), not a removed worktree its log knows nothing of. */
START_TEST(isolated_child_settles_when_the_process_exits_meanwhile)
{
	static const char rec[] = "{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"hang\":true}]},"
	    "{\"agent\":\"label:w\",\"replies\":[{\"tool_calls\":[{\"name\":\"write\",\"arguments\":{\"file_path\":"
	    "\"lib.c\",\"content\":\"int lib;\\n\"}}]},{\"text\":\"wrote lib.c\"}]}]}";
	char dir[64], *path, *log;
	struct tool_result r;
	struct exit_poll poll = { .tries = 0 };
	struct agent *root = iso_root(rec, dir, sizeof(dir), ".");

	spawn_kind_iso(root, "w", 1, NULL, "worktree", &r);
	runq_push(&T.q, exit_when_finishing, &poll);
	runq_drain(&T.q);
	ck_assert_msg(poll.fired, "tries %d", poll.tries);
	ck_assert_msg(r.error_code == ERR_NONE && r.output, "%s", r.text ? r.text : "(pending)");
	ck_assert_str_eq(json_string_value(json_object_get(r.output, "subagentId")), poll.id);
	ck_assert(T.rt.shutting_down);
	ck_assert_ptr_null(agent_rt_get(&T.rt, poll.id));	/* released once it was logged */
	path = xasprintf("%s/sessions/%s.jsonl", T.state, poll.id);
	log = test_read_file(path, NULL);
	char *committed = strstr(log, "\"type\":\"worktree/committed\""), *removed = strstr(log, "\"type\":\"worktree/removed\""),
	    *settled = strstr(log, "\"type\":\"subagent/settled\"");
	ck_assert_msg(committed && removed && settled && committed < removed && removed < settled, "%s", log);
	char *want = xasprintf("\"work\":\"Its work is on branch acp-agent/%.8s: 1 file(s) changed, +1 -0.\"", poll.id);
	ck_assert_msg(strstr(settled, want) != NULL, "%s", settled);
	free(want);
	free(log);
	free(path);
	path = xasprintf("%s/worktrees/%s", T.state, poll.id);
	ck_assert_int_ne(access(path, F_OK), 0);
	free(path);
	tool_result_clear(&r);
	finish();
	test_rmtree(dir);
}
END_TEST

Suite *
subagent_suite(void)
{
	Suite *s = suite_create("subagent");
	TCase *tc = tcase_create("subagent");

	tcase_add_test(tc, notice_wording_for_every_end);
	tcase_add_test(tc, render_forms);
	tcase_add_test(tc, listing_matrix_with_unavailable_and_retry);
	tcase_add_test(tc, load_settles_only_what_a_crash_cut_off);
	tcase_add_test(tc, listing_survives_a_lineage_cycle);
	tcase_add_test(tc, listing_omits_a_live_child_in_its_creation_window);
	tcase_add_test(tc, listing_memo_equals_a_fresh_build);
	tcase_add_test(tc, send_authority_matrix);
	tcase_add_test(tc, send_to_parent_from_one_shot_or_without_live_parent);
	tcase_add_test(tc, send_to_a_cold_child_waits_for_its_log_off_the_loop);
	tcase_add_test(tc, interrupt_authority_matrix);
	tcase_add_test(tc, interrupt_a_resident_root_is_unauthorized);
	tcase_add_test(tc, interrupt_authority_follows_any_depth_and_survives_a_cycle);
	tcase_add_test(tc, capacity_counts_resident_continuable_children_only);
	tcase_add_test(tc, depth_limit);
	tcase_add_test(tc, typed_children_are_composed_from_their_type);
	tcase_add_test(tc, isolated_child_works_in_its_worktree);
	tcase_add_test(tc, isolated_child_settles_when_the_process_exits_meanwhile);
	tcase_add_test(tc, isolated_call_cancelled_while_its_worktree_is_made);
	suite_add_tcase(s, tc);
	return s;
}
