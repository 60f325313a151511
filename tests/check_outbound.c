/* acp/outbound: our requests to the client (docs/contract.md §16.4): ids, answers by id, cancel, timeouts. */
#include <stdlib.h>
#include <string.h>

#include "acp/outbound.h"
#include "base/xjson.h"
#include "tests/helpers.h"

static json_t *sent;		/* every message the table sent */
static int calls;
static json_t *got_result, *got_error;
static enum err_code got_code;

static void
capture(void *arg, json_t *msg)
{
	(void)arg;
	json_array_append_new(sent, msg);
}

static void
on_done(void *arg, const json_t *result, const json_t *error, const struct err *e)
{
	(void)arg;
	calls++;
	json_decref(got_result);
	json_decref(got_error);
	got_result = result ? json_deep_copy(result) : NULL;
	got_error = error ? json_deep_copy(error) : NULL;
	got_code = e ? e->code : ERR_NONE;
}

static void
setup(struct acp_outbound *ob, struct runq *q, struct ev_loop *loop)
{
	sent = json_array();
	calls = 0;
	got_result = got_error = NULL;
	got_code = ERR_NONE;
	runq_init(q, loop);
	acp_outbound_init(ob, loop, q, capture, NULL);
}

static void
teardown(struct acp_outbound *ob, struct runq *q)
{
	runq_stop(q);
	acp_outbound_free(ob);
	json_decref(sent);
	json_decref(got_result);
	json_decref(got_error);
	got_result = got_error = NULL;
}

static json_t *
answer(long id, const char *body)
{
	char line[512];

	snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":%ld,%s}", id, body);
	return json_loads(line, 0, NULL);
}

START_TEST(outbound_ids_count_up_and_answers_match_by_id)
{
	struct acp_outbound ob;
	struct runq q;

	setup(&ob, &q, NULL);
	long a = acp_outbound_request(&ob, "fs/read_text_file", xjson_pack("{s:s}", "path", "/w/a"), 0, on_done, NULL);
	long b = acp_outbound_request(&ob, "fs/read_text_file", xjson_pack("{s:s}", "path", "/w/b"), 0, on_done, NULL);
	ck_assert_int_eq(a, 1);
	ck_assert_int_eq(b, 2);
	ck_assert_uint_eq(json_array_size(sent), 2);
	json_t *m = json_array_get(sent, 1);
	ck_assert_str_eq(json_string_value(json_object_get(m, "jsonrpc")), "2.0");
	ck_assert_int_eq(json_integer_value(json_object_get(m, "id")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(m, "method")), "fs/read_text_file");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "params"), "path")), "/w/b");
	ck_assert_uint_eq(acp_outbound_pending(&ob), 2);
	/* b answers first; the delivery waits for the run queue. */
	json_t *r = answer(b, "\"result\":{\"content\":\"B\"}");
	ck_assert_int_eq(acp_outbound_answer(&ob, json_object_get(r, "id"), r), 1);
	json_decref(r);
	ck_assert_int_eq(calls, 0);
	runq_drain(&q);
	ck_assert_int_eq(calls, 1);
	ck_assert_str_eq(json_string_value(json_object_get(got_result, "content")), "B");
	/* A second answer to b, and one to an id never used, are not ours any more. */
	r = answer(b, "\"result\":{}");
	ck_assert_int_eq(acp_outbound_answer(&ob, json_object_get(r, "id"), r), 0);
	json_decref(r);
	r = answer(77, "\"result\":{}");
	ck_assert_int_eq(acp_outbound_answer(&ob, json_object_get(r, "id"), r), 0);
	json_decref(r);
	/* A string id is never one of ours (ours are integers). */
	r = json_loads("{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}", 0, NULL);
	ck_assert_int_eq(acp_outbound_answer(&ob, json_object_get(r, "id"), r), 0);
	json_decref(r);
	/* a: an error answer reaches the owner as the client's error object. */
	r = answer(a, "\"error\":{\"code\":-32002,\"message\":\"file not found\"}");
	ck_assert_int_eq(acp_outbound_answer(&ob, json_object_get(r, "id"), r), 1);
	json_decref(r);
	runq_drain(&q);
	ck_assert_int_eq(calls, 2);
	ck_assert_ptr_null(got_result);
	ck_assert_int_eq(json_integer_value(json_object_get(got_error, "code")), -32002);
	ck_assert_uint_eq(acp_outbound_pending(&ob), 0);
	teardown(&ob, &q);
}
END_TEST

START_TEST(outbound_null_result_is_a_success)
{
	struct acp_outbound ob;
	struct runq q;

	setup(&ob, &q, NULL);
	long a = acp_outbound_request(&ob, "fs/write_text_file", NULL, 0, on_done, NULL);
	json_t *r = answer(a, "\"result\":null");
	ck_assert_int_eq(acp_outbound_answer(&ob, json_object_get(r, "id"), r), 1);
	json_decref(r);
	runq_drain(&q);
	ck_assert_int_eq(calls, 1);
	ck_assert_ptr_nonnull(got_result);
	ck_assert(json_is_object(got_result));
	ck_assert_ptr_null(got_error);
	/* params NULL went out as {} */
	ck_assert(json_is_object(json_object_get(json_array_get(sent, 0), "params")));
	teardown(&ob, &q);
}
END_TEST

START_TEST(outbound_cancel_drops_the_request_and_tells_the_client)
{
	struct acp_outbound ob;
	struct runq q;

	setup(&ob, &q, NULL);
	long a = acp_outbound_request(&ob, "session/request_permission", NULL, 0, on_done, NULL);
	long b = acp_outbound_request(&ob, "session/request_permission", NULL, 0, on_done, NULL);
	acp_outbound_cancel(&ob, a);
	ck_assert_uint_eq(json_array_size(sent), 3);
	json_t *c = json_array_get(sent, 2);
	ck_assert_str_eq(json_string_value(json_object_get(c, "method")), "$/cancel_request");
	ck_assert_ptr_null(json_object_get(c, "id"));		/* a notification */
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(c, "params"), "requestId")), a);
	/* The late answer to a is ignored; nothing of a runs. */
	json_t *r = answer(a, "\"result\":{}");
	ck_assert_int_eq(acp_outbound_answer(&ob, json_object_get(r, "id"), r), 0);
	json_decref(r);
	/* b answered, then cancelled before its delivery ran: dropped too, and no $/cancel_request. */
	r = answer(b, "\"result\":{}");
	ck_assert_int_eq(acp_outbound_answer(&ob, json_object_get(r, "id"), r), 1);
	json_decref(r);
	acp_outbound_cancel(&ob, b);
	acp_outbound_cancel(&ob, b);		/* twice is harmless */
	acp_outbound_cancel(&ob, 999);		/* unknown is harmless */
	runq_drain(&q);
	ck_assert_int_eq(calls, 0);
	ck_assert_uint_eq(json_array_size(sent), 3);
	teardown(&ob, &q);
}
END_TEST

static void
stop_loop(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

START_TEST(outbound_timeout_fails_only_that_request)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct acp_outbound ob;
	struct runq q;
	ev_timer guard;

	setup(&ob, &q, loop);
	long slow = acp_outbound_request(&ob, "fs/read_text_file", NULL, 20, on_done, NULL);
	acp_outbound_request(&ob, "session/request_permission", NULL, 0, on_done, NULL);	/* no timeout */
	ev_timer_init(&guard, stop_loop, 3.0, 0.);
	ev_timer_start(loop, &guard);
	test_log_capture_start();
	while (calls == 0 && ev_is_active(&guard)) {
		ev_run(loop, EVRUN_ONCE);	/* the timeout fires and queues its delivery */
		runq_drain(&q);
	}
	char *logged = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(logged, "the client did not answer fs/read_text_file (request 1) in time"));
	free(logged);
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(got_code, ERR_CLIENT_TIMEOUT);
	ck_assert_ptr_null(got_result);
	ck_assert_ptr_null(got_error);
	/* The client was told; the permission ask still waits. */
	json_t *c = json_array_get(sent, 2);
	ck_assert_str_eq(json_string_value(json_object_get(c, "method")), "$/cancel_request");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(c, "params"), "requestId")), slow);
	ck_assert_uint_eq(acp_outbound_pending(&ob), 1);
	ev_timer_stop(loop, &guard);
	teardown(&ob, &q);
	ev_loop_destroy(loop);
}
END_TEST

Suite *
outbound_suite(void)
{
	Suite *s = suite_create("outbound");
	TCase *tc = tcase_create("requests");

	tcase_add_test(tc, outbound_ids_count_up_and_answers_match_by_id);
	tcase_add_test(tc, outbound_null_result_is_a_success);
	tcase_add_test(tc, outbound_cancel_drops_the_request_and_tells_the_client);
	tcase_add_test(tc, outbound_timeout_fails_only_that_request);
	suite_add_tcase(s, tc);
	return s;
}
