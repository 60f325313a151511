/* Turns, steps and tool dispatch (docs/contract.md §4), driven by the replay model without a loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "session/store_def.h"	/* looks inside */
#include "agent/agent_def.h"	/* tests look inside */
#include "agent/agent_types.h"
#include "agent/ask.h"
#include "agent/instructions.h"
#include "agent/permit.h"
#include "base/xmalloc.h"
#include "tests/helpers.h"

static struct test_runtime T;
static struct toolbox tb;
static char last_first[64];
static json_t *last_reason;
static struct tool_inv *pending;

static int
echo_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	(void)inv;
	tool_result_set(out, json_string_value(json_object_get(args, "text")), json_pack("{s:b}", "ok", 1));
	return TOOL_DONE;
}

static void
slow_cancel(struct tool_inv *inv)
{
	(void)inv;
	pending = NULL;
}

static int
slow_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	(void)args;
	(void)out;
	pending = inv;
	inv->cancel = slow_cancel;
	return TOOL_PENDING;
}

/* A tool whose text is cut inside a character, as a "%.80s" of a message can be. */
static int
cut_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	(void)inv;
	(void)args;
	tool_result_error(out, ERR_INVALID_ARGUMENT, "%.4s", "caf\xc3\xa9");
	return TOOL_DONE;
}

static const struct tool cut_tool = { .name = "cut", .description = "cuts",
	.schema = "{\"type\":\"object\",\"properties\":{}}", .kind = "other", .concurrency_safe = 1, .run = cut_run };

static const struct tool echo_tool = { .name = "echo", .description = "echoes",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,"
	"\"required\":[\"text\"],\"properties\":{\"text\":{\"type\":\"string\"}}}", .kind = "other",
	.concurrency_safe = 1, .run = echo_run };
static const struct tool slow_tool = { .name = "slow", .description = "waits",
	.schema = "{\"type\":\"object\",\"properties\":{}}", .kind = "other", .run = slow_run };

static void
on_turn_end(void *arg, struct agent *a, const char *first, const json_t *reason)
{
	(void)arg;
	(void)a;
	snprintf(last_first, sizeof(last_first), "%s", first);
	json_decref(last_reason);
	last_reason = json_deep_copy(reason);
}

static struct agent *
start(const char *recording, int max_steps)
{
	struct agent_hooks hooks = { .turn_end = on_turn_end };

	test_runtime_start(&T, recording);
	toolbox_init(&tb);
	toolbox_add(&tb, &echo_tool);
	toolbox_add(&tb, &slow_tool);
	toolbox_add(&tb, &cut_tool);
	T.rt.max_steps = max_steps;
	return agent_new_root(&T.rt, "/w", &tb, &hooks);
}

static void
prompt(struct agent *a, const char *text, char *id)
{
	agent_post(a, json_pack("[{s:s, s:s}]", "type", "text", "text", text), json_pack("{s:s}", "kind", "user"), id);
}

/* The event types of a's log joined by spaces. */
static char *
types(struct agent *a)
{
	static char out[4096];
	size_t i;
	json_t *ev;

	json_t *all = sess_read_all(a->sess);

	out[0] = '\0';
	json_array_foreach(all, i, ev) {
		if (out[0])
			strcat(out, " ");
		strcat(out, json_string_value(json_object_get(ev, "type")));
	}
	json_decref(all);
	return out;
}

static const json_t *
find(struct agent *a, const char *type, int nth)
{
	static json_t *all;	/* what the answer borrows from: kept until the log grows */
	static const struct agent *of;
	size_t i;
	json_t *ev;

	if (of != a || all == NULL || json_array_size(all) != a->sess->nev) {
		json_decref(all);
		all = sess_read_all(a->sess);
		of = a;
	}
	json_array_foreach(all, i, ev)
		if (strcmp(json_string_value(json_object_get(ev, "type")), type) == 0 && nth-- == 0)
			return json_object_get(ev, "data");
	return NULL;
}

static void
finish(void)
{
	test_runtime_finish(&T);
	toolbox_free(&tb);
	json_decref(last_reason);
	last_reason = NULL;
}

START_TEST(agent_turn_dispatches_tools_and_commits_results_in_order)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"tool_calls\":[{\"name\":\"echo\",\"arguments\":{\"text\":\"one\"}},{\"name\":\"nope\"},"
	    "{\"name\":\"echo\",\"arguments\":{\"txt\":1}}]},"
	    "{\"expect\":\"\\\"text\\\" is required\",\"text\":\"done\"}]}]}", 50);
	char id[64];

	prompt(a, "go", id);
	runq_drain(&T.q);
	ck_assert_str_eq(types(a), "turn/start user/message step/start assistant/message tool/call tool/call "
	    "tool/call tool/result tool/result tool/result step/end step/start assistant/message step/end turn/end");
	ck_assert_str_eq(last_first, id);
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "completed");
	const json_t *r0 = find(a, "tool/result", 0), *r1 = find(a, "tool/result", 1), *r2 = find(a, "tool/result", 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r0, "content"), 0), "text")), "one");
	ck_assert(json_is_true(json_object_get(json_object_get(r0, "output"), "ok")));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r1, "error"), "code")), "UNKNOWN_TOOL");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r1, "content"), 0), "text")),
	    "Error: unknown tool \"nope\"");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r2, "error"), "code")), "INVALID_ARGUMENT");
	ck_assert_int_eq(a->status, AGENT_IDLE);
	finish();
}
END_TEST

START_TEST(agent_cancel_during_a_pending_tool_records_cancelled)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"tool_calls\":[{\"name\":\"slow\"},{\"name\":\"echo\",\"arguments\":{\"text\":\"later\"}}]}]}]}", 50);

	prompt(a, "go", NULL);
	runq_drain(&T.q);
	ck_assert_ptr_nonnull(pending);
	ck_assert_int_eq(a->status, AGENT_RUNNING);
	agent_cancel(a, "user");
	runq_drain(&T.q);
	ck_assert_ptr_null(pending);	/* the tool's cancel ran */
	ck_assert_str_eq(types(a), "turn/start user/message step/start assistant/message tool/call tool/result "
	    "tool/result step/end turn/end");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(find(a, "tool/result", 0), "error"), "code")),
	    "CANCELLED");
	const json_t *end = json_object_get(find(a, "turn/end", 0), "reason");
	ck_assert_str_eq(json_string_value(json_object_get(end, "kind")), "aborted");
	ck_assert_str_eq(json_string_value(json_object_get(end, "cause")), "user");
	finish();
}
END_TEST

START_TEST(agent_cancel_while_the_model_hangs)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"hang\":true},{\"text\":\"x\"}]}]}", 50);

	prompt(a, "go", NULL);
	runq_drain(&T.q);
	ck_assert_ptr_nonnull(a->req);
	agent_cancel(a, "user");
	ck_assert_str_eq(types(a), "turn/start user/message step/start step/end turn/end");
	/* Cancelling an idle agent is a no-op. */
	agent_cancel(a, "user");
	ck_assert_str_eq(types(a), "turn/start user/message step/start step/end turn/end");
	finish();
}
END_TEST

START_TEST(agent_step_limit_ends_max_steps)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"tool_calls\":[{\"name\":\"echo\",\"arguments\":{\"text\":\"1\"}}]},"
	    "{\"tool_calls\":[{\"name\":\"echo\",\"arguments\":{\"text\":\"2\"}}]},"
	    "{\"text\":\"never asked\"}]}]}", 2);

	prompt(a, "go", NULL);
	runq_drain(&T.q);
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "max-steps");
	ck_assert_int_eq(a->requests, 2);
	ck_assert_ptr_nonnull(find(a, "tool/result", 1));	/* the last request's tools still ran */
	finish();
}
END_TEST

START_TEST(agent_message_for_a_running_agent_is_steered)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"tool_calls\":[{\"name\":\"slow\"}]},"
	    "{\"expect\":\"steer me\",\"text\":\"saw it\"}]}]}", 50);
	struct tool_result r = { 0 };

	prompt(a, "go", NULL);
	runq_drain(&T.q);
	agent_post(a, json_pack("[{s:s, s:s}]", "type", "text", "text", "steer me"),
	    json_pack("{s:s}", "kind", "agent-message"), NULL);
	tool_result_set(&r, "slow done", NULL);
	tool_inv_complete(pending, &r);
	runq_drain(&T.q);
	ck_assert_str_eq(types(a), "turn/start user/message step/start assistant/message tool/call tool/result "
	    "step/end user/message step/start assistant/message step/end turn/end");
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "completed");
	finish();
}
END_TEST

START_TEST(agent_model_error_and_length_map_to_turn_reasons)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"error\":{\"message\":\"bad gateway\",\"code\":\"HTTP_502\"}},"
	    "{\"text\":\"cut\",\"finish\":\"length\"},{\"finish\":\"refusal\"}]}]}", 50);

	prompt(a, "one", NULL);
	runq_drain(&T.q);
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "error");
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "message")), "bad gateway");
	prompt(a, "two", NULL);
	runq_drain(&T.q);
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "max-tokens");
	prompt(a, "three", NULL);
	runq_drain(&T.q);
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "refusal");
	ck_assert_int_eq(a->turn, 3);
	finish();
}
END_TEST

START_TEST(agent_text_that_is_not_utf8_is_repaired_not_dropped)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"tool_calls\":[{\"name\":\"cut\"}]},{\"text\":\"done\"}]}]}", 50);

	prompt(a, "go", NULL);
	runq_drain(&T.q);
	const json_t *r = find(a, "tool/result", 0);
	ck_assert_ptr_nonnull(json_object_get(r, "content"));	/* the event kept its payload */
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text")),
	    "Error: caf\xef\xbf\xbd");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "error"), "code")), "INVALID_ARGUMENT");
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "completed");
	finish();
}
END_TEST

/* A provider whose one answer is an error message cut inside a character. */
static struct model_sink bad_sink;

static void
bad_deliver(void *arg)
{
	(void)arg;
	bad_sink.error(bad_sink.arg, "MODEL_STREAM", "malformed data line: \"\xe2\x82");
}

/* A scripted provider: start keeps the sink and queues stub_deliver, which plays the answer. */
static runq_fn *stub_deliver;

static struct model_req *
bad_start(struct model *m, const struct model_call *call, const struct model_sink *sink)
{
	(void)call;
	bad_sink = *sink;
	runq_push(m->runq, stub_deliver, NULL);
	return (struct model_req *)&bad_sink;
}

static void
bad_cancel(struct model *m, struct model_req *r)
{
	(void)m;
	(void)r;
}

START_TEST(agent_an_error_message_that_is_not_utf8_still_reaches_the_reason)
{
	static const struct model_ops bad_ops = { "bad", bad_start, bad_cancel, NULL, NULL };
	struct agent *a = start("{\"version\":1,\"scripts\":[]}", 50);
	struct model bad = { &bad_ops, &T.q, NULL, NULL, NULL };
	struct model *replay = T.rt.model;

	T.rt.model = &bad;
	stub_deliver = bad_deliver;
	prompt(a, "go", NULL);
	runq_drain(&T.q);
	T.rt.model = replay;
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "error");
	ck_assert_ptr_nonnull(json_object_get(last_reason, "message"));
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "message")),
	    "malformed data line: \"\xef\xbf\xbd\xef\xbf\xbd");
	const json_t *end = json_object_get(find(a, "turn/end", 0), "reason");
	ck_assert_str_eq(json_string_value(json_object_get(end, "message")),
	    "malformed data line: \"\xef\xbf\xbd\xef\xbf\xbd");
	finish();
}
END_TEST

START_TEST(agent_system_prompt_names_cwd_and_date)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[]}", 50);
	char *p = agent_system_prompt(a);

	ck_assert_ptr_nonnull(strstr(p, "Your working directory is /w."));
	ck_assert_ptr_nonnull(strstr(p, "Today's date is 2026-09-10."));
	ck_assert_ptr_null(strstr(p, "subagent of"));
	free(p);
	finish();
}
END_TEST

/* A provider that names its calls "", "x", "x" (some OpenAI-compatible servers send "" for every
 * call): every call of the message still gets its own id, and a proper id stays the provider's. */
static void
dup_deliver(void *arg)
{
	(void)arg;
	bad_sink.tool_call(bad_sink.arg, "", "no_such_tool", "{}");
	bad_sink.tool_call(bad_sink.arg, "x", "no_such_tool", "{}");
	bad_sink.tool_call(bad_sink.arg, "x", "no_such_tool", "{}");
	bad_sink.finish(bad_sink.arg, "tool_calls", NULL);
}


START_TEST(agent_call_ids_are_unique_within_a_message)
{
	static const struct model_ops dup_ops = { "dup", bad_start, bad_cancel, NULL, NULL };
	struct agent *a = start("{\"version\":1,\"scripts\":[]}", 1);
	struct model dup = { &dup_ops, &T.q, NULL, NULL, NULL };
	struct model *replay = T.rt.model;

	T.rt.model = &dup;
	stub_deliver = dup_deliver;
	prompt(a, "go", NULL);
	runq_drain(&T.q);
	T.rt.model = replay;
	const json_t *content = json_object_get(find(a, "assistant/message", 0), "content");
	const char *id0 = json_string_value(json_object_get(json_array_get(content, 0), "callId"));
	const char *id1 = json_string_value(json_object_get(json_array_get(content, 1), "callId"));
	const char *id2 = json_string_value(json_object_get(json_array_get(content, 2), "callId"));
	ck_assert_str_ne(id0, "");
	ck_assert_str_eq(id1, "x");
	ck_assert_str_ne(id2, "x");
	ck_assert_str_ne(id0, id2);
	/* each call has its own result */
	ck_assert_str_eq(json_string_value(json_object_get(find(a, "tool/result", 2), "callId")), id2);
	finish();
}
END_TEST

/* A cancel that lands between a step's start and its model request (the loop reads stdin between
 * run-queue slices): the step still closes, no request leaves for the dead step, and the next
 * turn makes exactly one. */
static struct agent *cancel_target;

static void
cancel_at_sync(void *arg)
{
	(void)arg;
	if (cancel_target)
		agent_cancel(cancel_target, "user");
	cancel_target = NULL;
}

START_TEST(agent_cancel_before_the_request_leaves_closes_the_step)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"text\":\"never asked\"},{\"text\":\"the next turn\"}]}]}", 50);

	runq_set_sync(&T.q, cancel_at_sync, NULL);	/* the sync pass comes before the request */
	cancel_target = a;
	prompt(a, "go", NULL);
	runq_drain(&T.q);
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "aborted");
	ck_assert_ptr_nonnull(find(a, "step/start", 0));
	ck_assert_ptr_nonnull(find(a, "step/end", 0));
	ck_assert_ptr_null(find(a, "assistant/message", 0));
	prompt(a, "again", NULL);
	runq_drain(&T.q);
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "completed");
	/* the replay position counts step/starts: the dead step took "never asked", one request here */
	const json_t *m = find(a, "assistant/message", 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(m, "content"), 0),
	    "text")), "the next turn");
	ck_assert_ptr_null(find(a, "assistant/message", 1));
	finish();
}
END_TEST

/* The runtime's cap (docs/contract.md §19): every tool's text goes through rt->cap_text before it is logged. */
static size_t capped_len;

static void
fake_cap(struct agent *a, const char *name, char **text, size_t *len)
{
	(void)a;
	ck_assert_ptr_null(strchr(name, '/'));	/* a file name, whatever the call id held */
	capped_len = *len;
	if (*len > 1000) {
		free(*text);
		*text = strdup("capped");
		*len = 6;
	}
}

START_TEST(agent_every_tool_text_goes_through_the_cap)
{
	char *big = malloc(300 * 1024 + 1);
	memset(big, 'x', 300 * 1024);
	big[300 * 1024] = '\0';
	char *rec = NULL;
	if (asprintf(&rec, "{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"tool_calls\":[{\"name\":\"echo\",\"arguments\":{\"text\":\"%s\"}}]},{\"text\":\"ok\"}]}]}",
	    big) < 0)
		ck_abort();
	struct agent *a = start(rec, 50);

	T.rt.cap_text = fake_cap;
	prompt(a, "go", NULL);
	runq_drain(&T.q);
	ck_assert_uint_eq(capped_len, 300 * 1024);
	const json_t *r = find(a, "tool/result", 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text")),
	    "capped");
	finish();
	free(rec);
	free(big);
}
END_TEST

static long long usage_seen = -1;
static char compaction_seen[256];

static void
on_usage(void *arg, struct agent *a, long long used)
{
	(void)arg;
	(void)a;
	usage_seen = used;
}

static void
on_compaction(void *arg, struct agent *a, const char *id, const char *status, const char *text)
{
	(void)arg;
	(void)a;
	size_t n = strlen(compaction_seen);
	snprintf(compaction_seen + n, sizeof(compaction_seen) - n, "%s%s:%s%s%s", n ? " " : "", id, status,
	    text ? "=" : "", text ? text : "");
}

/* Over the threshold, the next request compacts first; the summary request is not a step. */
START_TEST(agent_threshold_compaction_before_the_request)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"text\":\"first\",\"usage\":{\"prompt_tokens\":9000,\"completion_tokens\":10}},"
	    "{\"expect\":\"second\",\"text\":\"after\"}],"
	    "\"compactions\":[{\"expect\":\"Summarise\",\"text\":\"SUM\"}]}]}", 50);

	a->hooks.usage = on_usage;
	a->hooks.compaction = on_compaction;
	compaction_seen[0] = '\0';
	T.rt.context_window = 10000;
	T.rt.compact_at = 0.8;
	prompt(a, "first", NULL);
	runq_drain(&T.q);
	ck_assert_int_eq(usage_seen, 9010);
	prompt(a, "second", NULL);
	runq_drain(&T.q);
	ck_assert_str_eq(types(a), "turn/start user/message step/start assistant/message step/end turn/end "
	    "turn/start user/message step/start context/compacted assistant/message step/end turn/end");
	ck_assert_str_eq(compaction_seen, "compaction-1:in_progress compaction-1:completed=SUM");
	const json_t *c = find(a, "context/compacted", 0);
	ck_assert_int_eq(json_integer_value(json_object_get(c, "through")), 6);	/* "second" stays verbatim */
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "completed");
	ck_assert_int_eq(json_array_size(a->conv.msgs), 3);	/* summary, "second", "after" */
	finish();
}
END_TEST

/* A cancel during the summary request logs the attempt (cancelled) and closes the step. */
START_TEST(agent_cancel_during_a_compaction)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"text\":\"first\",\"usage\":{\"prompt_tokens\":9000,\"completion_tokens\":10}},"
	    "{\"text\":\"never\"}],\"compactions\":[{\"hang\":true}]}]}", 50);

	a->hooks.compaction = on_compaction;
	compaction_seen[0] = '\0';
	T.rt.context_window = 10000;
	prompt(a, "first", NULL);
	runq_drain(&T.q);
	prompt(a, "second", NULL);
	runq_drain(&T.q);
	ck_assert_int_eq(a->status, AGENT_RUNNING);
	agent_cancel(a, "user");
	runq_drain(&T.q);
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "aborted");
	const json_t *f = find(a, "context/compaction_failed", 0);
	ck_assert_str_eq(json_string_value(json_object_get(f, "reason")), "cancelled");
	ck_assert_str_eq(compaction_seen, "compaction-1:in_progress compaction-1:cancelled");
	ck_assert_ptr_nonnull(find(a, "step/end", 1));
	ck_assert_int_eq(a->conv.attempts, 1);
	finish();
}
END_TEST

/* A summary request must fit the window too: the oldest messages leave it (builtin's summary shows
 * which messages it was sent). */
START_TEST(agent_summary_request_drops_the_oldest_messages_to_fit)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[]}", 50);
	struct model *replay = T.rt.model, *builtin = model_builtin_new(&T.q);
	char text[1600];

	T.rt.model = builtin;
	T.rt.context_window = 1000;
	T.rt.compact_at = 0.8;
	memset(text, 'A', 1500);
	text[1500] = '\0';
	prompt(a, text, NULL);
	runq_drain(&T.q);
	ck_assert_ptr_null(find(a, "context/compacted", 0));
	memset(text, 'B', 1500);
	prompt(a, text, NULL);
	runq_drain(&T.q);
	const json_t *c = find(a, "context/compacted", 0);
	ck_assert_ptr_nonnull(c);
	const char *sum = json_string_value(json_object_get(c, "summary"));
	ck_assert_ptr_null(strstr(sum, "user: AAAA"));		/* dropped: over the budget */
	ck_assert_ptr_nonnull(strstr(sum, "user: BBBB"));
	ck_assert_ptr_eq(strstr(sum, "assistant: "), sum);	/* never starts at a tool message */
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "completed");
	T.rt.model = replay;
	model_free(builtin);
	finish();
}
END_TEST

/* Released agents are freed from the run queue, after the work queued for them (docs/decisions.md, "Architecture and the workspace"). */
START_TEST(agent_released_agents_are_reaped_after_their_queued_work)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"text\":\"one\"}]},{\"agent\":\"root\",\"replies\":[{\"text\":\"two\"}]}]}", 50);
	struct agent_hooks hooks = { .turn_end = on_turn_end };
	struct agent *b;

	prompt(a, "go", NULL);
	runq_drain(&T.q);
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "completed");
	ck_assert_uint_eq(T.rt.nall, 1);
	agent_release(a);
	ck_assert_uint_eq(T.rt.nall, 1);	/* marked: the reap is queued */
	runq_drain(&T.q);
	ck_assert_uint_eq(T.rt.nall, 0);
	/* Released with its kick queued: the kick finds it released, the reap follows it. */
	b = agent_new_root(&T.rt, "/w", &tb, &hooks);
	prompt(b, "go", NULL);
	ck_assert_int_eq(b->pins, 1);
	agent_release(b);
	ck_assert_uint_eq(T.rt.nall, 1);
	runq_drain(&T.q);
	ck_assert_uint_eq(T.rt.nall, 0);
	finish();
}
END_TEST

/* The extension seam (agent/ext.h): hooks in list order, state freed at the reap. */
static char ext_trace[512];
static const char ext_key_a = 0, ext_key_b = 0;

static void
ext_note(const char *what, struct agent *a)
{
	(void)a;
	strcat(ext_trace, what);
	strcat(ext_trace, " ");
}
static void ext_a_start(struct agent *a) { ext_note("a:start", a); }
static void ext_a_end(struct agent *a) { ext_note(a->status == AGENT_IDLE ? "a:end(idle)" : "a:end(?)", a); }
static void ext_a_release(struct agent *a) { ext_note(a->sess ? "a:release(sess)" : "a:release(nosess)", a); }
static void ext_b_start(struct agent *a) { ext_note("b:start", a); }
static void ext_b_recover(struct agent *a) { ext_note("b:recover", a); }
static void ext_a_prompt(const struct agent *a, struct buf *b) { (void)a; buf_puts(b, "\n\n[A]"); }
static void ext_b_prompt(const struct agent *a, struct buf *b) { (void)a; buf_puts(b, "\n\n[B]"); }
static void ext_free(void *p) { strcat(ext_trace, (const char *)p); strcat(ext_trace, ":freed "); }

/* An extension tool that is gone at the call (its MCP server restarts) but was advertised to
 * the step's request: the call reaches it (it says why it fails), never UNKNOWN_TOOL. */
static int vanishing_looks;

static int
vanishing_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	(void)inv, (void)args;
	tool_result_error(out, ERR_MCP_NOT_READY, "MCP server \"x\" is restarting");
	return TOOL_DONE;
}

static const struct tool vanishing_tool = { .name = "mcp__x__gone", .description = "comes and goes",
	.schema = "{\"type\":\"object\",\"properties\":{}}", .kind = "other", .run = vanishing_run,
	.cls = PERMIT_READ };

/* Present for the request's two looks (its description, what it advertised), then gone. */
static const struct toolbox *
vanishing_toolbox(struct agent *a)
{
	static struct toolbox full, empty;

	(void)a;
	if (full.schemas == NULL) {	/* made once, kept for the run (static, like an MCP set's) */
		toolbox_init(&full);
		toolbox_add(&full, &vanishing_tool);
		toolbox_init(&empty);
	}
	return vanishing_looks++ < 2 ? &full : &empty;
}

START_TEST(agent_call_resolves_against_the_steps_tools)
{
	static const struct agent_ext x = { .name = "x", .toolbox = vanishing_toolbox };
	static const struct agent_ext *const exts[] = { &x, NULL };
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"tool_calls\":[{\"name\":\"mcp__x__gone\",\"arguments\":{}}]},{\"text\":\"done\"}]}]}", 50);

	vanishing_looks = 0;
	agent_rt_set_exts(&T.rt, exts);
	prompt(a, "go", NULL);
	runq_drain(&T.q);
	ck_assert_int_ge(vanishing_looks, 3);	/* looked for again at the call: gone by then */
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(find(a, "tool/result", 0), "error"),
	    "code")), "MCP_NOT_READY");
	agent_rt_set_exts(&T.rt, NULL);
	finish();
}
END_TEST

START_TEST(agent_extensions_hook_in_order_and_free_their_state)
{
	static const struct agent_ext xa = { .name = "a", .prompt = ext_a_prompt, .turn_start = ext_a_start,
		.turn_end = ext_a_end, .release = ext_a_release };
	static const struct agent_ext xb = { .name = "b", .prompt = ext_b_prompt, .turn_start = ext_b_start,
		.recover = ext_b_recover };
	static const struct agent_ext *const exts[] = { &xa, &xb, NULL };
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"text\":\"one\"}]}]}", 50);
	char *sys;

	ext_trace[0] = '\0';
	agent_rt_set_exts(&T.rt, exts);
	sys = agent_system_prompt(a);
	ck_assert_ptr_nonnull(strstr(sys, ".\n\n[A]\n\n[B]"));	/* after the opening, in list order */
	free(sys);
	ck_assert_ptr_null(agent_state(a, &ext_key_a));
	agent_state_set(a, &ext_key_a, (void *)"sa", ext_free);
	agent_state_set(a, &ext_key_b, (void *)"sb", ext_free);
	ck_assert_str_eq(agent_state(a, &ext_key_b), "sb");
	prompt(a, "go", NULL);
	runq_drain(&T.q);
	agent_rt_recover(a);
	ck_assert_str_eq(ext_trace, "a:start b:start a:end(idle) b:recover ");
	agent_release(a);
	ck_assert_str_eq(ext_trace, "a:start b:start a:end(idle) b:recover a:release(sess) ");
	runq_drain(&T.q);	/* the reap frees the state, in the order it was given */
	ck_assert_str_eq(ext_trace, "a:start b:start a:end(idle) b:recover a:release(sess) sa:freed sb:freed ");
	finish();
}
END_TEST

/* ---- asks (docs/contract.md §17): a fake client answers the permission requests ---- */

struct fake_ask {
	struct tool_inv *inv;
	json_t *options;
	agent_client_done *done;
	void *arg;
};

static struct fake_client {
	struct fake_ask asks[8];
	int nasks;
	long cancelled[8];
	int ncancelled;
	char statuses[256];
	int runs;
} F;

static long
fake_request(void *self, const char *sid, const char *method, json_t *params, long timeout_ms,
    agent_client_done *done, void *arg, struct err *e)
{
	(void)self, (void)sid, (void)method, (void)timeout_ms, (void)done, (void)arg, (void)e;
	json_decref(params);
	return 0;
}

static void
fake_cancel(void *self, long id)
{
	(void)self;
	F.cancelled[F.ncancelled++] = id;
}

static int
fake_can(void *self, const char *cap)
{
	(void)self, (void)cap;
	return 0;
}

static long
fake_ask(void *self, struct tool_inv *inv, json_t *options, agent_client_done *done, void *arg, struct err *e)
{
	(void)self, (void)e;
	F.asks[F.nasks] = (struct fake_ask){ inv, options, done, arg };
	return ++F.nasks;
}

static void
fake_status(void *self, struct tool_inv *inv, const char *status)
{
	(void)self, (void)inv;
	strcat(F.statuses, status);
	strcat(F.statuses, " ");
}

static const struct agent_client fake_client = { fake_request, fake_cancel, fake_can, fake_ask, fake_status, NULL, NULL };

/* The client's answer to ask k: an option, or NULL for cancelled. */
static void
answer(int k, const char *option)
{
	json_t *r = option ? json_pack("{s:{s:s, s:s}}", "outcome", "outcome", "selected", "optionId", option)
			   : json_pack("{s:{s:s}}", "outcome", "outcome", "cancelled");
	F.asks[k].done(F.asks[k].arg, r, NULL, NULL);
	json_decref(r);
	runq_drain(&T.q);
}

static int
risky_prepare(struct tool_inv *inv, const json_t *args, struct tool_plan *plan, struct tool_result *out)
{
	(void)inv;
	if (plan->verdict == PERMIT_REFUSE) {
		tool_result_read_only(out, inv->tool);
		return -1;
	}
	plan->command = strdup(json_string_value(json_object_get(args, "command")));
	plan->content = json_pack("[{s:s, s:{s:s, s:s}}]", "type", "content", "content", "type", "text", "text",
	    "shown");
	return 0;
}

static int
risky_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	(void)inv;
	F.runs++;
	tool_result_set(out, json_string_value(json_object_get(args, "command")), NULL);
	return TOOL_DONE;
}

static const struct tool risky_tool = { .name = "risky", .description = "runs",
	.schema = "{\"type\":\"object\",\"required\":[\"command\"],\"properties\":{\"command\":{\"type\":\"string\"}}}",
	.kind = "execute", .run = risky_run, .cls = PERMIT_EXEC, .prepare = risky_prepare };
static const struct tool edit_tool = { .name = "edits", .description = "edits",
	.schema = "{\"type\":\"object\",\"properties\":{}}", .kind = "edit", .run = echo_run, .cls = PERMIT_EDIT };

/* A root in mode m whose script calls risky (command, then the same with " -s") in two turns. */
static struct agent *
ask_start_cmd(enum permit_mode m, const char *command)
{
	char *script = xasprintf("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"tool_calls\":[{\"name\":\"risky\",\"arguments\":{\"command\":\"%s\"}}]},{\"text\":\"one\"},"
	    "{\"tool_calls\":[{\"name\":\"risky\",\"arguments\":{\"command\":\"%s -s\"}}]},{\"text\":\"two\"}"
	    "]}]}", command, command);
	struct agent *a = start(script, 50);

	free(script);

	memset(&F, 0, sizeof(F));
	toolbox_add(&tb, &risky_tool);
	toolbox_add(&tb, &edit_tool);
	T.rt.client = &fake_client;
	T.rt.start_mode = m;
	return a;
}

/* A root in mode m whose script calls risky ("git status") twice, in two turns, then answers. */
static struct agent *
ask_start(enum permit_mode m)
{
	return ask_start_cmd(m, "git status");
}

/* The client's answer to ask k with any outcome and option. */
static void
answer_raw(int k, const char *outcome, const char *option)
{
	json_t *r = json_pack("{s:{s:s, s:s}}", "outcome", "outcome", outcome, "optionId", option);

	F.asks[k].done(F.asks[k].arg, r, NULL, NULL);
	json_decref(r);
	runq_drain(&T.q);
}

static void
ask_finish(void)
{
	for (int i = 0; i < F.nasks; i++)
		json_decref(F.asks[i].options);
	T.rt.client = NULL;
	finish();
}

START_TEST(agent_ask_allow_runs_and_always_is_remembered)
{
	struct agent *a = ask_start(PERMIT_DEFAULT);

	prompt(a, "go", NULL);
	runq_drain(&T.q);
	ck_assert_int_eq(F.nasks, 1);
	ck_assert_int_eq(F.runs, 0);			/* nothing runs before the answer */
	ck_assert_int_eq(a->status, AGENT_RUNNING);
	ck_assert_ptr_nonnull(strstr(types(a), "tool/call"));
	ck_assert_ptr_null(strstr(types(a), "tool/result"));
	ck_assert(F.asks[0].inv->asking);		/* what the announcement reads: pending */
	json_t *o = F.asks[0].options;
	ck_assert_uint_eq(json_array_size(o), 4);
	static const char *const ids[] = { "allow", "allow_always", "reject", "reject_always" };
	static const char *const kinds[] = { "allow_once", "allow_always", "reject_once", "reject_always" };
	for (int i = 0; i < 4; i++) {
		ck_assert_str_eq(json_string_value(json_object_get(json_array_get(o, i), "optionId")), ids[i]);
		ck_assert_str_eq(json_string_value(json_object_get(json_array_get(o, i), "kind")), kinds[i]);
	}
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(o, 1), "name")),
	    "Always allow \"git status …\"");
	answer(0, "allow_always");
	ck_assert_int_eq(F.runs, 1);
	ck_assert_str_eq(F.statuses, "in_progress ");
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "completed");
	const json_t *rule = find(a, "permission/rule", 0);
	ck_assert_ptr_nonnull(rule);
	ck_assert_str_eq(json_string_value(json_object_get(rule, "rule")), "exec:git status");
	ck_assert(json_is_true(json_object_get(rule, "allow")));
	/* The second call matches the rule: no ask. */
	prompt(a, "again", NULL);
	runq_drain(&T.q);
	ck_assert_int_eq(F.nasks, 1);
	ck_assert_int_eq(F.runs, 2);
	ask_finish();
}
END_TEST

START_TEST(agent_ask_reject_fails_the_call_and_the_turn_goes_on)
{
	struct agent *a = ask_start(PERMIT_DEFAULT);

	prompt(a, "go", NULL);
	runq_drain(&T.q);
	answer(0, "reject");
	ck_assert_int_eq(F.runs, 0);
	const json_t *r = find(a, "tool/result", 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "error"), "code")), "PERMISSION_REJECTED");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text")),
	    "Error: the user rejected this command");
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "completed");	/* "one" */
	/* reject_always: the next matching call is rejected without an ask. */
	prompt(a, "again", NULL);
	runq_drain(&T.q);
	ck_assert_int_eq(F.nasks, 2);
	answer(1, "reject_always");
	ck_assert_ptr_nonnull(find(a, "permission/rule", 0));
	ck_assert_int_eq(F.runs, 0);
	ask_finish();
}
END_TEST

START_TEST(agent_ask_cancelled_outcome_and_cancel_while_asking)
{
	struct agent *a = ask_start(PERMIT_DEFAULT);

	prompt(a, "go", NULL);
	runq_drain(&T.q);
	answer(0, NULL);				/* outcome cancelled: the turn is cancelled */
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "aborted");
	ck_assert_int_eq(F.runs, 0);
	const json_t *r = find(a, "tool/result", 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "error"), "code")), "CANCELLED");
	/* session/cancel while asking: the ask is dropped ($/cancel_request) and the call cancelled. */
	prompt(a, "again", NULL);	/* the script's "one" */
	runq_drain(&T.q);
	prompt(a, "and again", NULL);	/* its second call */
	runq_drain(&T.q);
	ck_assert_int_eq(F.nasks, 2);
	agent_cancel(a, "user");
	ck_assert_int_eq(F.ncancelled, 1);
	ck_assert_int_eq(F.cancelled[0], 2);
	runq_drain(&T.q);
	ck_assert_str_eq(json_string_value(json_object_get(last_reason, "kind")), "aborted");
	ck_assert_int_eq(F.runs, 0);
	ask_finish();
}
END_TEST

START_TEST(agent_ask_unknown_option_is_a_reject)
{
	struct agent *a = ask_start(PERMIT_DEFAULT);

	prompt(a, "go", NULL);
	runq_drain(&T.q);
	test_log_capture_start();
	answer(0, "maybe");
	char *logged = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(logged, "permission answer selected \"maybe\" for call_1_1_1 was not offered"));
	free(logged);
	ck_assert_int_eq(F.runs, 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(find(a, "tool/result", 0), "error"),
	    "code")), "PERMISSION_REJECTED");
	ask_finish();
}
END_TEST

/* docs/decisions.md: an outcome other than selected or cancelled is a reject, whatever its option. */
START_TEST(agent_ask_outcome_not_selected_is_a_reject)
{
	struct agent *a = ask_start(PERMIT_DEFAULT);

	prompt(a, "go", NULL);
	runq_drain(&T.q);
	answer_raw(0, "maybe", "allow");
	ck_assert_int_eq(F.runs, 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(find(a, "tool/result", 0), "error"),
	    "code")), "PERMISSION_REJECTED");
	ask_finish();
}
END_TEST

/* An always option where none was offered (a compound command has no rule) is a reject. */
START_TEST(agent_ask_always_not_offered_is_a_reject)
{
	struct agent *a = ask_start_cmd(PERMIT_DEFAULT, "ls | wc -l");

	prompt(a, "go", NULL);
	runq_drain(&T.q);
	ck_assert_int_eq(F.nasks, 1);
	ck_assert_int_eq((int)json_array_size(F.asks[0].options), 2);	/* allow, reject */
	answer(0, "allow_always");
	ck_assert_int_eq(F.runs, 0);
	ck_assert_ptr_null(find(a, "permission/rule", 0));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(find(a, "tool/result", 0), "error"),
	    "code")), "PERMISSION_REJECTED");
	ask_finish();
}
END_TEST

START_TEST(agent_ask_modes_follow_the_table)
{
	struct agent *a = ask_start(PERMIT_FULL_ACCESS);
	struct err e;

	prompt(a, "go", NULL);
	runq_drain(&T.q);
	ck_assert_int_eq(F.nasks, 0);			/* full access: no ask */
	ck_assert_int_eq(F.runs, 1);
	/* read-only: commands still ask; the mode is logged and read back. */
	err_clear(&e);
	ck_assert_int_eq(agent_set_mode(a, PERMIT_READ_ONLY, &e), 0);
	ck_assert_int_eq(agent_mode(a), PERMIT_READ_ONLY);
	ck_assert_str_eq(json_string_value(json_object_get(find(a, "session/mode", 0), "mode")), "read-only");
	prompt(a, "again", NULL);
	runq_drain(&T.q);
	ck_assert_int_eq(F.nasks, 1);
	answer(0, "allow");
	ck_assert_int_eq(F.runs, 2);
	ask_finish();
}
END_TEST

START_TEST(agent_ask_rejected_edit_names_an_edit)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"tool_calls\":[{\"name\":\"edits\",\"arguments\":{}}]},{\"text\":\"one\"}]}]}", 50);

	memset(&F, 0, sizeof(F));
	toolbox_add(&tb, &edit_tool);
	T.rt.client = &fake_client;
	T.rt.start_mode = PERMIT_DEFAULT;
	prompt(a, "go", NULL);
	runq_drain(&T.q);
	ck_assert_int_eq(F.nasks, 1);
	/* An edit's one narrow rule: edit:* with the contract's names. */
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(F.asks[0].options, 1), "name")),
	    "Allow all edits in this workspace");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(F.asks[0].options, 3), "name")),
	    "Reject all edits in this workspace");
	answer(0, "reject");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(find(a, "tool/result", 0),
	    "content"), 0), "text")), "Error: the user rejected this edit");
	ask_finish();
}
END_TEST

START_TEST(agent_ask_read_only_refuses_edits)
{
	struct agent *a = start("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"tool_calls\":[{\"name\":\"edits\",\"arguments\":{}}]},{\"text\":\"one\"}]}]}", 50);

	memset(&F, 0, sizeof(F));
	toolbox_add(&tb, &edit_tool);
	T.rt.client = &fake_client;
	T.rt.start_mode = PERMIT_READ_ONLY;
	prompt(a, "go", NULL);
	runq_drain(&T.q);
	ck_assert_int_eq(F.nasks, 0);
	const json_t *r = find(a, "tool/result", 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
	    "PERMISSION_MODE_READ_ONLY");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text")),
	    "Error: edits is not allowed in read-only mode");
	T.rt.client = NULL;
	finish();
}
END_TEST


/* Writes text to dir/name, making dir. */
static void
types_file(const char *dir, const char *name, const char *text)
{
	char *cmd = xasprintf("mkdir -p '%s'", dir), *path = xasprintf("%s/%s", dir, name);

	ck_assert_int_eq(system(cmd), 0);
	test_write_file(path, text, strlen(text));
	free(cmd);
	free(path);
}

/* The four sources in precedence order with the built-ins after them; a Claude Code file read as
 * Claude Code writes it; every bad file skipped with its reason and nothing else lost; a
 * directory's change seen by a stat (docs/contract.md §23.1). */
START_TEST(agent_types_read_from_files_in_precedence_order)
{
	static const char *const known[] = { "read", "write", "edit", "glob", "grep", "bash", "subagent",
		"send_message", "list_agents", "todo_write", NULL };
	char root[64], ws[128], home[128], cfg[128], d[256], *big;
	struct agent_types t;
	const struct agent_type *ty;

	test_mkdtemp(root, sizeof(root));
	snprintf(ws, sizeof(ws), "%s/ws", root);
	snprintf(home, sizeof(home), "%s/home", root);
	snprintf(cfg, sizeof(cfg), "%s/cfg", root);
	snprintf(d, sizeof(d), "%s/.acp-agent/agents", ws);
	types_file(d, "reviewer.md", "---\nname: reviewer\ndescription: Reviews a change\ntools: [read, grep]\n"
	    "permission_mode: read-only\nmaxTurns: 7\nmodel: gpt-x\n---\n\nReview the diff.\n\n");
	types_file(d, "no-desc.md", "---\nname: nodesc\n---\nbody\n");
	types_file(d, "bad-name.md", "---\nname: Bad Name!\ndescription: x\n---\n");
	{
		static const char bin[] = "---\ndescription: x\n---\n\0\1\2";
		char *p = xasprintf("%s/binary.md", d);
		test_write_file(p, bin, sizeof(bin) - 1);
		free(p);
	}
	types_file(d, "block.md", "---\ndescription: |\n  two\n  lines\n---\n");
	types_file(d, "perm.md", "---\ndescription: x\npermissionMode: sudo\n---\n");
	types_file(d, "steps.md", "---\ndescription: x\nmax_steps: -3\n---\n");
	types_file(d, "notes.txt", "---\ndescription: not a type\n---\n");
	big = xmalloc(200 * 1024 + 1);
	memset(big, 'x', 200 * 1024);
	big[200 * 1024] = '\0';
	types_file(d, "big.md", big);
	free(big);
	char *sub = xasprintf("mkdir -p '%s/dir.md' && ln -s loop.md '%s/loop.md'", d, d);
	ck_assert_int_eq(system(sub), 0);
	free(sub);
	snprintf(d, sizeof(d), "%s/.claude/agents", ws);
	/* Claude Code's format: its tool names, an alias model, a name taken above */
	types_file(d, "code-reviewer.md", "---\nname: code-reviewer\ndescription: Use after writing code: checks it for "
	    "bugs and style\ntools: Read, Grep, Glob, Bash, WebFetch, MultiEdit\nmodel: sonnet\n---\n"
	    "You are a careful reviewer.\nList each problem with its file and line.\n");
	types_file(d, "reviewer.md", "---\ndescription: shadowed by the workspace's own\n---\n");
	snprintf(d, sizeof(d), "%s/acp-agent/agents", cfg);
	types_file(d, "explore.md", "---\ndescription: My explorer\ndisallowedTools:\n  - bash\n  - mcp__web__*\n---\nLook.\n");
	snprintf(d, sizeof(d), "%s/.claude/agents", home);
	types_file(d, "helper.md", "---\ndescription: \"A helper, \\\"quoted\\\"\"\nisolation: worktree\n---\n");

	test_log_capture_start();
	agent_types_load(&t, ws, home, cfg, known, NULL);
	char *log = test_log_capture_stop();
	/* by name: the built-in general after the files; explore from the user's file */
	ck_assert_uint_eq(t.n, 5);
	ck_assert_str_eq(t.v[0].name, "code-reviewer");
	ck_assert_str_eq(t.v[1].name, "explore");
	ck_assert_str_eq(t.v[2].name, "general");
	ck_assert_str_eq(t.v[3].name, "helper");
	ck_assert_str_eq(t.v[4].name, "reviewer");
	ty = agent_types_get(&t, "reviewer");
	ck_assert_str_eq(ty->description, "Reviews a change");
	ck_assert_str_eq(ty->instructions, "Review the diff.");
	ck_assert_int_eq(ty->ceiling, PERMIT_READ_ONLY);
	ck_assert_int_eq(ty->max_steps, 7);
	ck_assert_str_eq(ty->model, "gpt-x");
	ck_assert_int_eq(json_array_size(ty->tools), 2);
	ck_assert_ptr_null(ty->denied);
	ty = agent_types_get(&t, "code-reviewer");
	char *tools = json_dumps(ty->tools, JSON_COMPACT);
	ck_assert_str_eq(tools, "[\"read\",\"grep\",\"glob\",\"bash\",\"edit\"]");
	free(tools);
	ck_assert_ptr_null(ty->model);		/* sonnet: the parent's, with a warning */
	ck_assert_int_eq(ty->ceiling, -1);
	ck_assert_str_eq(ty->instructions, "You are a careful reviewer.\nList each problem with its file and line.");
	ck_assert_ptr_nonnull(strstr(log, "tool \"WebFetch\" is not a tool here: ignored"));
	ck_assert_ptr_nonnull(strstr(log, "model sonnet is Claude Code's alias"));
	ty = agent_types_get(&t, "explore");
	ck_assert_ptr_nonnull(ty->path);
	ck_assert_str_eq(ty->description, "My explorer");
	ck_assert_ptr_null(ty->tools);
	tools = json_dumps(ty->denied, JSON_COMPACT);
	ck_assert_str_eq(tools, "[\"bash\",\"mcp__web__*\"]");
	free(tools);
	ty = agent_types_get(&t, "helper");
	ck_assert_str_eq(ty->description, "A helper, \"quoted\"");
	ck_assert_int_eq(ty->worktree, 1);
	ty = agent_types_get(&t, "general");
	ck_assert_ptr_null(ty->path);
	ck_assert_ptr_null(ty->tools);
	ck_assert_ptr_null(agent_types_get(&t, "nodesc"));
	/* every skipped file, once, with its reason, in the order met (a directory's names sorted) */
	static const char *const skipped[][2] = {
		{ "bad-name.md", "the name \"bad name!\" is not [a-z0-9][a-z0-9_-]{0,63}" },
		{ "big.md", "larger than 128 KiB" },
		{ "binary.md", "not UTF-8 text" },
		{ "block.md", "line 2: block scalars (| or >) are not supported: write the value on one line" },
		{ "dir.md", "not a regular file" },
		{ "loop.md", "cannot be opened: Too many levels of symbolic links" },
		{ "no-desc.md", "no description" },
		{ "perm.md", "permissionMode is not read-only, default, accept-edits or full-access" },
		{ "steps.md", "maxTurns is not a positive integer" },
		{ "reviewer.md", "the name reviewer is already defined by " },
	};
	ck_assert_uint_eq(json_array_size(t.skipped), sizeof(skipped) / sizeof(skipped[0]));
	for (size_t i = 0; i < sizeof(skipped) / sizeof(skipped[0]); i++) {
		json_t *s = json_array_get(t.skipped, i);
		const char *path = json_string_value(json_object_get(s, "path"));
		const char *why = json_string_value(json_object_get(s, "reason"));
		ck_assert_msg(strcmp(path + strlen(path) - strlen(skipped[i][0]), skipped[i][0]) == 0, "%zu: %s", i, path);
		ck_assert_msg(strncmp(why, skipped[i][1], strlen(skipped[i][1])) == 0, "%s: %s", path, why);
		char *line = xasprintf("agent type %s: %s", path, why);
		ck_assert_msg(strstr(log, line) != NULL, "no warning %s", line);
		free(line);
	}
	free(log);
	/* unchanged directories: not stale; a new file in one: stale */
	ck_assert_int_eq(agent_types_stale(&t), 0);
	snprintf(d, sizeof(d), "%s/.claude/agents", home);
	types_file(d, "another.md", "---\ndescription: new\n---\n");
	ck_assert_int_eq(agent_types_stale(&t), 1);
	agent_types_free(&t);
	/* no home, an empty workspace: the built-ins alone */
	agent_types_load(&t, root, NULL, NULL, known, NULL);
	ck_assert_uint_eq(t.n, 2);
	ck_assert_str_eq(agent_types_get(&t, "explore")->description, "Read-only agent for finding and understanding "
	    "code: it searches, reads and reports what it found with paths and line numbers. It cannot edit files, run "
	    "commands or start agents.");
	ck_assert_int_eq(agent_types_get(&t, "explore")->ceiling, PERMIT_READ_ONLY);
	agent_types_free(&t);
	test_rmtree(root);
}
END_TEST

/* Sets the files below dir whose name matches glob, and the directories, to 2020 (what has not
 * just changed; all the same mtime, the change time of each is now). */
static void
types_age(const char *dir, const char *glob)
{
	char *cmd = xasprintf("find '%s' \\( -name '%s' -o -type d \\) -exec touch -h -d '2020-01-01 00:00:00' {} +",
	    dir, glob);

	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
}

/*
 * The runtime's memo (agent_types.h): a set is shared while every file has the stat it was read
 * with; an edit in place is seen even when its mtime is set back (the change time); a file that
 * did not change is not read again, so its warning is not repeated; a file changed a moment ago is
 * never trusted to its stat; every reference given back frees everything (valgrind and asan).
 */
START_TEST(agent_types_memo_shares_what_did_not_change)
{
	static const char *const known[] = { "read", "grep", NULL };
	char root[64], ws[128], home[128], d[256], *log;
	struct agent_types *a, *b, *c;
	struct agent_types_memo *memo = agent_types_memo_new(AGENT_TYPES_RACY_S);

	test_mkdtemp(root, sizeof(root));
	snprintf(ws, sizeof(ws), "%s/ws", root);
	snprintf(home, sizeof(home), "%s/home", root);
	snprintf(d, sizeof(d), "%s/.acp-agent/agents", ws);
	types_file(d, "one.md", "---\ndescription: First\n---\nBody one.\n");
	types_file(d, "bad.md", "---\nname: nodesc\n---\n");
	types_age(root, "*.md");
	test_log_capture_start();
	a = agent_types_shared(memo, ws, home, NULL, known);
	log = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(log, "bad.md: no description"));
	free(log);
	ck_assert_str_eq(agent_types_get(a, "one")->description, "First");
	b = agent_types_shared(memo, ws, home, NULL, known);
	ck_assert_ptr_eq(a, b);		/* nothing changed: the same set */
	agent_types_unref(b);
	/* an edit in place, its mtime set back: the change time shows it */
	types_file(d, "one.md", "---\ndescription: Other\n---\nBody one.\n");
	types_age(root, "one.md");
	test_log_capture_start();
	c = agent_types_shared(memo, ws, home, NULL, known);
	log = test_log_capture_stop();
	ck_assert_ptr_ne(a, c);
	ck_assert_str_eq(agent_types_get(c, "one")->description, "Other");
	ck_assert_str_eq(agent_types_get(a, "one")->description, "First");	/* a holder's set stays whole */
	ck_assert_ptr_null(strstr(log, "bad.md"));	/* not read again: not warned again */
	ck_assert_uint_eq(json_array_size(c->skipped), 1);
	free(log);
	agent_types_unref(a);
	agent_types_unref(c);
	/* a file written a moment ago is read every time: an edit within its time stamp's tick shows */
	types_file(d, "two.md", "---\ndescription: Fresh A\n---\n");
	a = agent_types_shared(memo, ws, home, NULL, known);
	types_file(d, "two.md", "---\ndescription: Fresh B\n---\n");
	b = agent_types_shared(memo, ws, home, NULL, known);
	ck_assert_str_eq(agent_types_get(b, "two")->description, "Fresh B");
	agent_types_unref(a);
	agent_types_unref(b);
	agent_types_memo_free(memo);
	/* an MCP name a descriptor could not hold is not a tool here; a workspace that is the home
	 * reads its .claude/agents once */
	snprintf(d, sizeof(d), "%s/.claude/agents", home);
	types_file(d, "three.md", "---\ndescription: Third\ntools: mcp__my server__x, mcp__ok__y, mcp__caf\xc3\xa9*\n---\n");
	struct agent_types t;
	test_log_capture_start();
	agent_types_load(&t, home, home, NULL, known, NULL);
	log = test_log_capture_stop();
	char *tools = json_dumps(agent_types_get(&t, "three")->tools, JSON_COMPACT);
	ck_assert_str_eq(tools, "[\"mcp__ok__y\"]");
	free(tools);
	ck_assert_ptr_nonnull(strstr(log, "tool \"mcp__my server__x\" is not a tool here: ignored"));
	ck_assert_uint_eq(json_array_size(t.skipped), 0);
	free(log);
	agent_types_free(&t);
	test_rmtree(root);
}
END_TEST

/* Project instructions (docs/contract.md §25): the user's file shown as ~/…, the repository's from
 * its root down to the workspace (AGENTS.md before CLAUDE.md), the 32 KiB cut at a character with
 * its marker and the later files left out, a file that is not UTF-8 left out, a huge one never
 * read whole; nested files once each, outer first. */
START_TEST(agent_instructions_from_the_repository_root_down)
{
	char root[64], d[256], *big;
	struct agent_instructions in;
	char *more;

	test_mkdtemp(root, sizeof(root));
	snprintf(d, sizeof(d), "%s/home/.config/acp-agent", root);
	types_file(d, "AGENTS.md", "Be brief!\n\n");	/* 11 bytes: the budget left is odd */
	snprintf(d, sizeof(d), "%s/repo", root);
	types_file(d, ".git", "gitdir: x\n");
	types_file(d, "AGENTS.md", "Repo rules.\n");
	snprintf(d, sizeof(d), "%s/repo/a", root);
	types_file(d, "CLAUDE.md", "A rules.\n");
	snprintf(d, sizeof(d), "%s/repo/a/ws", root);
	types_file(d, "AGENTS.md", "WS rules.\n");
	types_file(d, "CLAUDE.md", "not read\n");
	snprintf(d, sizeof(d), "%s/repo/a/ws/x/y", root);
	types_file(d, "CLAUDE.md", "Y rules.\n");
	snprintf(d, sizeof(d), "%s/repo/a/ws/x", root);
	types_file(d, "AGENTS.md", "X rules.\n");
	char *home = xasprintf("%s/home", root), *ws = xasprintf("%s/repo/a/ws", root);
	agent_instructions_read(&in, ws, home, NULL);
	ck_assert_str_eq(in.block, "\n\n# Instructions from ~/.config/acp-agent/AGENTS.md\nBe brief!\n\n"
	    "\n\n# Instructions from ../../AGENTS.md\nRepo rules.\n"
	    "\n\n# Instructions from ../CLAUDE.md\nA rules.\n"
	    "\n\n# Instructions from AGENTS.md\nWS rules.\n");
	ck_assert_uint_eq(json_array_size(in.files), 4);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(in.files, 3), "path")), "AGENTS.md");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(in.files, 3), "bytes")), 10);
	/* nested: outer first, once; a path outside the workspace or through .. gives nothing */
	more = agent_instructions_nested(&in, "x/y/file.c");
	ck_assert_str_eq(more, "\n\n# Instructions from x/AGENTS.md\nX rules.\n\n\n# Instructions from x/y/CLAUDE.md\nY rules.\n");
	free(more);
	ck_assert_ptr_null(agent_instructions_nested(&in, "x/y/other.c"));
	char *abs = xasprintf("%s/x/y/z.c", ws);
	ck_assert_ptr_null(agent_instructions_nested(&in, abs));
	free(abs);
	ck_assert_ptr_null(agent_instructions_nested(&in, "../../AGENTS.md"));
	ck_assert_ptr_null(agent_instructions_nested(&in, "/etc/passwd"));
	ck_assert_uint_eq(json_array_size(in.files), 6);
	agent_instructions_free(&in);
	/* one call's nested files together at most 32 KiB: the second cut, the third left for later */
	{
		char *r2 = xasprintf("%s/deep", root), *dx = xasprintf("%s/x", r2), *dy = xasprintf("%s/x/y", r2),
		    *dz = xasprintf("%s/x/y/z", r2), *twenty = xmalloc(20 * 1024 + 1);
		memset(twenty, 'r', 20 * 1024);
		twenty[20 * 1024] = '\0';
		types_file(dx, "AGENTS.md", twenty);
		types_file(dy, "CLAUDE.md", twenty);
		types_file(dz, "AGENTS.md", "Z rules.\n");
		free(twenty);
		agent_instructions_read(&in, r2, NULL, NULL);
		test_log_capture_start();
		more = agent_instructions_nested(&in, "x/y/z/f.c");
		free(test_log_capture_stop());
		ck_assert_ptr_nonnull(strstr(more, "# Instructions from x/y/CLAUDE.md\n"));
		ck_assert_ptr_nonnull(strstr(more, AGENT_INSTRUCTIONS_CUT));
		ck_assert_ptr_null(strstr(more, "Z rules."));
		ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(in.files, 1), "bytes")), 12 * 1024);
		free(more);
		more = agent_instructions_nested(&in, "x/y/z/g.c");
		ck_assert_str_eq(more, "\n\n# Instructions from x/y/z/AGENTS.md\nZ rules.\n");
		free(more);
		agent_instructions_free(&in);
		free(r2);
		free(dx);
		free(dy);
		free(dz);
	}
	/* the workspace as a client may spell it, and a path's ./ and //: one directory each */
	char *spelled = xasprintf("%s/repo/a/./ws//", root);
	agent_instructions_read(&in, spelled, NULL, NULL);
	free(spelled);
	ck_assert_str_eq(in.block, "\n\n# Instructions from ../../AGENTS.md\nRepo rules.\n"
	    "\n\n# Instructions from ../CLAUDE.md\nA rules.\n\n\n# Instructions from AGENTS.md\nWS rules.\n");
	more = agent_instructions_nested(&in, "./x//y/./file.c");
	ck_assert_str_eq(more, "\n\n# Instructions from x/AGENTS.md\nX rules.\n\n\n# Instructions from x/y/CLAUDE.md\nY rules.\n");
	free(more);
	ck_assert_ptr_null(agent_instructions_nested(&in, "x//y/again.c"));
	agent_instructions_free(&in);
	/* an AGENTS.md that is a link out of the repository (a key, a token) is never given */
	snprintf(d, sizeof(d), "%s/secret", root);
	types_file(d, "key", "SECRET\n");
	char *ln = xasprintf("ln -s '%s/secret/key' '%s/repo/a/ws/x/z/AGENTS.md' 2>/dev/null || "
	    "{ mkdir -p '%s/repo/a/ws/x/z' && ln -s '%s/secret/key' '%s/repo/a/ws/x/z/AGENTS.md'; }",
	    root, root, root, root, root);
	ck_assert_int_eq(system(ln), 0);
	free(ln);
	agent_instructions_read(&in, ws, NULL, NULL);
	test_log_capture_start();
	more = agent_instructions_nested(&in, "x/z/f.c");
	char *lg = test_log_capture_stop();
	ck_assert_ptr_nonnull(more);	/* x/AGENTS.md, and not the link */
	ck_assert_ptr_null(strstr(more, "SECRET"));
	ck_assert_ptr_nonnull(strstr(lg, "leads outside"));
	free(lg);
	free(more);
	agent_instructions_free(&in);
	/* the 32 KiB cut: inside a character of the repository's file; the workspace's left out */
	big = xmalloc(40 * 1024 + 1);
	for (size_t i = 0; i < 40 * 1024; i += 2)
		memcpy(big + i, "\xc3\xa9", 2);
	big[40 * 1024] = '\0';
	snprintf(d, sizeof(d), "%s/repo", root);
	types_file(d, "AGENTS.md", big);
	free(big);
	test_log_capture_start();
	agent_instructions_read(&in, ws, home, NULL);
	char *log = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(log, "/repo/AGENTS.md: cut at 32 KiB"));
	free(log);
	ck_assert_uint_eq(json_array_size(in.files), 2);
	size_t kept = (size_t)json_integer_value(json_object_get(json_array_get(in.files, 1), "bytes"));
	ck_assert_uint_eq(kept, 32 * 1024 - 12);	/* the user's 11 bytes, then whole characters: 32757 cut to 32756 */
	ck_assert_ptr_nonnull(strstr(in.block, "\xc3\xa9\n" AGENT_INSTRUCTIONS_CUT));
	ck_assert_ptr_null(strstr(in.block, "WS rules."));
	agent_instructions_free(&in);
	/* a budget smaller than one character: none of it, the marker, the rest left out */
	snprintf(d, sizeof(d), "%s/home/.config/acp-agent", root);
	big = xmalloc(32 * 1024);
	memset(big, 'a', 32 * 1024 - 1);
	big[32 * 1024 - 1] = '\0';
	types_file(d, "AGENTS.md", big);
	free(big);
	test_log_capture_start();
	agent_instructions_read(&in, ws, home, NULL);
	free(test_log_capture_stop());
	ck_assert_uint_eq(json_array_size(in.files), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(in.files, 1), "bytes")), 0);
	ck_assert_ptr_nonnull(strstr(in.block, "# Instructions from ../../AGENTS.md\n\n" AGENT_INSTRUCTIONS_CUT));
	agent_instructions_free(&in);
	/* not UTF-8: left out, the rest given; a 1 GB file (sparse: zero bytes) too, never read whole */
	snprintf(d, sizeof(d), "%s/repo", root);
	types_file(d, "AGENTS.md", "bad \xff byte\n");
	test_log_capture_start();
	agent_instructions_read(&in, ws, NULL, NULL);
	log = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(log, "/repo/AGENTS.md: not UTF-8 text: left out"));
	free(log);
	ck_assert_str_eq(in.block, "\n\n# Instructions from ../CLAUDE.md\nA rules.\n\n\n# Instructions from AGENTS.md\nWS rules.\n");
	agent_instructions_free(&in);
	char *cmd = xasprintf("truncate -s 1G '%s/repo/AGENTS.md'", root);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	test_log_capture_start();
	agent_instructions_read(&in, ws, NULL, NULL);	/* 32 KiB + 1 of its zero bytes are read */
	log = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(log, "/repo/AGENTS.md: not UTF-8 text: left out"));
	free(log);
	ck_assert_uint_eq(json_array_size(in.files), 2);
	agent_instructions_free(&in);
	/* no repository: the workspace alone */
	snprintf(d, sizeof(d), "%s/plain", root);
	types_file(d, "AGENTS.md", "Plain.\n");
	agent_instructions_read(&in, d, NULL, NULL);
	ck_assert_str_eq(in.block, "\n\n# Instructions from AGENTS.md\nPlain.\n");
	agent_instructions_free(&in);
	free(home);
	free(ws);
	test_rmtree(root);
}
END_TEST

Suite *
agent_suite(void)
{
	Suite *s = suite_create("agent");
	TCase *tc = tcase_create("turns");

	tcase_add_test(tc, agent_turn_dispatches_tools_and_commits_results_in_order);
	tcase_add_test(tc, agent_extensions_hook_in_order_and_free_their_state);
	tcase_add_test(tc, agent_call_resolves_against_the_steps_tools);
	tcase_add_test(tc, agent_ask_allow_runs_and_always_is_remembered);
	tcase_add_test(tc, agent_ask_reject_fails_the_call_and_the_turn_goes_on);
	tcase_add_test(tc, agent_ask_cancelled_outcome_and_cancel_while_asking);
	tcase_add_test(tc, agent_ask_unknown_option_is_a_reject);
	tcase_add_test(tc, agent_ask_outcome_not_selected_is_a_reject);
	tcase_add_test(tc, agent_ask_always_not_offered_is_a_reject);
	tcase_add_test(tc, agent_ask_modes_follow_the_table);
	tcase_add_test(tc, agent_ask_read_only_refuses_edits);
	tcase_add_test(tc, agent_ask_rejected_edit_names_an_edit);
	tcase_add_test(tc, agent_cancel_during_a_pending_tool_records_cancelled);
	tcase_add_test(tc, agent_cancel_while_the_model_hangs);
	tcase_add_test(tc, agent_step_limit_ends_max_steps);
	tcase_add_test(tc, agent_message_for_a_running_agent_is_steered);
	tcase_add_test(tc, agent_model_error_and_length_map_to_turn_reasons);
	tcase_add_test(tc, agent_system_prompt_names_cwd_and_date);
	tcase_add_test(tc, agent_call_ids_are_unique_within_a_message);
	tcase_add_test(tc, agent_cancel_before_the_request_leaves_closes_the_step);
	tcase_add_test(tc, agent_released_agents_are_reaped_after_their_queued_work);
	tcase_add_test(tc, agent_text_that_is_not_utf8_is_repaired_not_dropped);
	tcase_add_test(tc, agent_an_error_message_that_is_not_utf8_still_reaches_the_reason);
	tcase_add_test(tc, agent_every_tool_text_goes_through_the_cap);
	tcase_add_test(tc, agent_threshold_compaction_before_the_request);
	tcase_add_test(tc, agent_cancel_during_a_compaction);
	tcase_add_test(tc, agent_summary_request_drops_the_oldest_messages_to_fit);
	tcase_add_test(tc, agent_types_read_from_files_in_precedence_order);
	tcase_add_test(tc, agent_types_memo_shares_what_did_not_change);
	tcase_add_test(tc, agent_instructions_from_the_repository_root_down);
	suite_add_tcase(s, tc);
	return s;
}
