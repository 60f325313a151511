/* inspect and load (docs/contract.md §5.5). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "session/store_def.h"	/* looks inside */
#include "base/jenc.h"
#include "base/jsonbuild.h"
#include "base/jsonscan.h"
#include "base/xmalloc.h"
#include "session/checked.h"
#include "session/event.h"
#include "session/repair.h"
#include "session/store.h"
#include "session/stream.h"
#include "tests/helpers.h"

#define ID "00000000-0000-4000-8000-0000000000aa"
#define HDR "{\"type\":\"session\",\"version\":1,\"id\":\"" ID "\",\"createdAt\":1,\"cwd\":\"/w\",\"delegationDepth\":0}\n"
#define EV(seq, type, data) "{\"seq\":" #seq ",\"time\":1" #seq ",\"type\":\"" type "\",\"data\":" data "}\n"

static const char open_turn[] = HDR EV(0, "turn/start", "{\"turn\":1}")
    EV(1, "user/message", "{\"id\":\"m\",\"content\":[],\"source\":{\"kind\":\"user\"}}")
    EV(2, "step/start", "{\"turn\":1,\"step\":1}")
    EV(3, "assistant/message", "{\"turn\":1,\"step\":1,\"id\":\"a\",\"content\":[{\"type\":\"tool-call\",\"callId\":\"c1\",\"name\":\"t1\",\"arguments\":\"{}\"},{\"type\":\"tool-call\",\"callId\":\"c2\",\"name\":\"t2\",\"arguments\":\"{}\"},{\"type\":\"tool-call\",\"callId\":\"c3\",\"name\":\"t3\",\"arguments\":\"{}\"}],\"finish\":\"tool_calls\"}")
    EV(4, "tool/call", "{\"turn\":1,\"step\":1,\"callId\":\"c1\",\"name\":\"t1\",\"arguments\":\"{}\"}")
    EV(5, "tool/result", "{\"turn\":1,\"step\":1,\"callId\":\"c1\",\"name\":\"t1\",\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"isError\":false}")
    EV(6, "tool/call", "{\"turn\":1,\"step\":1,\"callId\":\"c2\",\"name\":\"t2\",\"arguments\":\"{}\"}");

static const char *
ev_type(const json_t *events, size_t i)
{
	return json_string_value(json_object_get(json_array_get(events, i), "type"));
}

static const json_t *
ev_data(const json_t *events, size_t i)
{
	return json_object_get(json_array_get(events, i), "data");
}

START_TEST(inspect_closes_an_open_turn_with_the_exact_closers)
{
	struct sess_image img;
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(sess_inspect_buf(open_turn, strlen(open_turn), &img, &e), 0);
	ck_assert_uint_eq(img.nclosers, 4);
	ck_assert_uint_eq(json_array_size(img.events), 11);
	ck_assert_str_eq(ev_type(img.events, 7), "tool/result");
	ck_assert_str_eq(json_string_value(json_object_get(ev_data(img.events, 7), "callId")), "c2");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev_data(img.events, 7), "error"),
	    "code")), "TOOL_OUTCOME_UNKNOWN");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(ev_data(img.events,
	    7), "content"), 0), "text")), SESS_TEXT_OUTCOME_UNKNOWN);
	ck_assert_str_eq(json_string_value(json_object_get(ev_data(img.events, 8), "callId")), "c3");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev_data(img.events, 8), "error"),
	    "code")), "TOOL_NOT_STARTED");
	ck_assert(json_is_true(json_object_get(ev_data(img.events, 8), "isError")));
	ck_assert_str_eq(ev_type(img.events, 9), "step/end");
	ck_assert_str_eq(ev_type(img.events, 10), "turn/end");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev_data(img.events, 10), "reason"),
	    "kind")), "interrupted");
	/* Closers take the last event's time and continue seq. */
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(img.events, 10), "time")), 16);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(img.events, 10), "seq")), 10);
	ck_assert_str_eq(SESS_TEXT_OUTCOME_UNKNOWN, "Error: the tool call was interrupted after it "
	    "started; its outcome is unknown. Retry only if it is safe to repeat.");
	ck_assert_str_eq(SESS_TEXT_NOT_STARTED, "Error: the tool call was interrupted before it started. "
	    "Retry it if it is still needed.");
	sess_image_free(&img);
}
END_TEST

START_TEST(inspect_ignores_a_torn_last_line)
{
	char buf[4096];
	struct sess_image img;
	struct err e;

	snprintf(buf, sizeof(buf), "%s%s", HDR EV(0, "turn/start", "{\"turn\":1}")
	    EV(1, "turn/end", "{\"turn\":1,\"reason\":{\"kind\":\"completed\"}}"), "{\"seq\":2,\"ti");
	err_clear(&e);
	ck_assert_int_eq(sess_inspect_buf(buf, strlen(buf), &img, &e), 0);
	ck_assert(img.torn);
	ck_assert_uint_eq(img.nclosers, 0);
	ck_assert_uint_eq(json_array_size(img.events), 2);
	ck_assert_int_eq(img.valid_len, (off_t)(strlen(buf) - strlen("{\"seq\":2,\"ti")));
	sess_image_free(&img);
	/* A complete last line that is not JSON is torn too. */
	snprintf(buf, sizeof(buf), "%s", HDR EV(0, "turn/start", "{\"turn\":1}") "garbage\n");
	err_clear(&e);
	ck_assert_int_eq(sess_inspect_buf(buf, strlen(buf), &img, &e), 0);
	ck_assert(img.torn);
	ck_assert_uint_eq(img.nclosers, 1);	/* the open turn is closed */
	sess_image_free(&img);
}
END_TEST

static void
assert_refused(const char *text, const char *code)
{
	struct sess_image img;
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(sess_inspect_buf(text, strlen(text), &img, &e), -1);
	ck_assert_str_eq(err_kind(e.code), code);
	sess_image_free(&img);
}

START_TEST(inspect_refuses_corruption)
{
	assert_refused("", "session_corrupt");
	assert_refused("garbage\n", "session_corrupt");
	assert_refused(HDR "garbage\n" EV(1, "turn/start", "{\"turn\":1}"), "session_corrupt");
	assert_refused(HDR EV(0, "turn/start", "{\"turn\":1}") EV(2, "turn/start", "{\"turn\":1}"),
	    "session_corrupt");
	assert_refused(HDR EV(0, "mystery/event", "{}"), "session_corrupt");
	assert_refused("{\"type\":\"session\",\"version\":2,\"id\":\"" ID "\",\"createdAt\":1,\"cwd\":\"/w\","
	    "\"delegationDepth\":0}\n", "session_unsupported");
	assert_refused("{\"type\":\"session\",\"version\":1,\"id\":\"../x\",\"createdAt\":1,\"cwd\":\"/w\","
	    "\"delegationDepth\":0}\n", "session_corrupt");
}
END_TEST

START_TEST(inspect_skips_ignorable_unknown_events)
{
	const char *text = HDR "{\"seq\":0,\"time\":1,\"type\":\"future/thing\",\"ignorable\":true,\"data\":{}}\n"
	    EV(1, "turn/start", "{\"turn\":1}") EV(2, "turn/end", "{\"turn\":1,\"reason\":{\"kind\":\"completed\"}}");
	struct sess_image img;
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(sess_inspect_buf(text, strlen(text), &img, &e), 0);
	ck_assert_uint_eq(img.nclosers, 0);
	sess_image_free(&img);
}
END_TEST

START_TEST(load_makes_the_repair_durable)
{
	char dir[64], state[128], path[256];
	struct sess_env env;
	struct sess_store store;
	struct sess_image img;
	struct err e;
	char torn[4096];

	test_mkdtemp(dir, sizeof(dir));
	snprintf(state, sizeof(state), "%s/state", dir);
	err_clear(&e);
	ck_assert_int_eq(sess_env_init(&env, state, SESS_SYNC_TURN, 1, NULL, &e), 0);
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, ID);
	snprintf(torn, sizeof(torn), "%s{\"seq\":7,\"tim", open_turn);
	test_write_file(path, torn, strlen(torn));
	sess_store_init(&store, &env);
	struct sess *s = sess_store_load(&store, ID, &e);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(s->nev, 11);
	sess_store_release(&store, s);
	/* On disk now: the torn bytes are gone and the closers are real. */
	err_clear(&e);
	ck_assert_int_eq(sess_inspect_file(path, &img, &e), 0);
	ck_assert(!img.torn);
	ck_assert_uint_eq(img.nclosers, 0);
	ck_assert_uint_eq(json_array_size(img.events), 11);
	ck_assert_str_eq(ev_type(img.events, 10), "turn/end");
	sess_image_free(&img);
	/* Loading twice appends nothing more. */
	s = sess_store_load(&store, ID, &e);
	ck_assert_uint_eq(s->nev, 11);
	sess_store_free(&store);
	sess_env_free(&env);
	test_rmtree(dir);
}
END_TEST

START_TEST(load_rejects_malformed_and_missing_ids)
{
	char dir[64], state[128];
	struct sess_env env;
	struct sess_store store;
	struct err e;

	test_mkdtemp(dir, sizeof(dir));
	snprintf(state, sizeof(state), "%s/state", dir);
	err_clear(&e);
	ck_assert_int_eq(sess_env_init(&env, state, SESS_SYNC_NONE, 1, NULL, &e), 0);
	sess_store_init(&store, &env);
	ck_assert_ptr_null(sess_store_load(&store, "../../etc/passwd", &e));
	ck_assert_int_eq(e.code, ERR_INVALID_PARAMS);
	err_clear(&e);
	ck_assert_ptr_null(sess_store_load(&store, ID, &e));
	ck_assert_int_eq(e.code, ERR_UNKNOWN_SESSION);
	/* A file that holds another session than its name says is refused, untouched. */
	char path[256];
	const char *other = "{\"type\":\"session\",\"version\":1,\"id\":\"00000000-0000-4000-8000-0000000000bb\","
	    "\"createdAt\":1,\"cwd\":\"/w\",\"delegationDepth\":0}\n";
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, ID);
	test_write_file(path, other, strlen(other));
	err_clear(&e);
	ck_assert_ptr_null(sess_store_load(&store, ID, &e));
	ck_assert_int_eq(e.code, ERR_SESSION_CORRUPT);
	ck_assert_ptr_nonnull(strstr(e.msg, "holds session 00000000-0000-4000-8000-0000000000bb"));
	sess_store_free(&store);
	sess_env_free(&env);
	test_rmtree(dir);
}
END_TEST

/* The scan gives inspect's verdict on the same bytes, and keeps exactly the events of the kept
 * types that inspect read (closers aside). */
static void
assert_scan_agrees(const char *text)
{
	static const char *const keep[] = { "turn/start", "assistant/message", "subagent/settled", NULL };
	struct sess_image img;
	struct sess_scan sc;
	struct err e1, e2;
	int r1, r2;

	err_clear(&e1);
	err_clear(&e2);
	r1 = sess_inspect_buf(text, strlen(text), &img, &e1);
	r2 = sess_scan_buf(text, strlen(text), keep, &sc, &e2);
	/* The scan checks the payloads of the lines it parses (the kept ones, those off its fast
	 * path); the payload of a fast-path line of a type nobody keeps is load's to refuse. */
	if (r1 < 0 && r2 == 0 && strstr(e1.msg, "): ") != NULL) {
		int kept = 0;
		for (size_t k = 0; keep[k]; k++) {
			char tag[64];
			snprintf(tag, sizeof(tag), " (%s): ", keep[k]);
			kept |= strstr(e1.msg, tag) != NULL;
		}
		ck_assert_msg(!kept, "the scan let through a kept event inspect refuses: %s", e1.msg);
		sess_scan_free(&sc);
		sess_image_free(&img);
		return;
	}
	ck_assert_msg(r1 == r2, "inspect %d (%s), scan %d on: %s", r1, e1.msg, r2, text);
	if (r1 == 0) {
		ck_assert_int_eq(img.valid_len, sc.valid_len);
		ck_assert_int_eq(img.torn, sc.torn);
		ck_assert_uint_eq(img.nclosers, sc.nclosers);
		ck_assert_int_eq((long)(json_array_size(img.events) - img.nclosers), sc.nevents);
		json_t *want = json_array();
		for (size_t i = 0; i + img.nclosers < json_array_size(img.events); i++) {
			json_t *ev = json_array_get(img.events, i);
			const char *t = json_string_value(json_object_get(ev, "type"));
			for (size_t k = 0; keep[k]; k++)
				if (strcmp(t, keep[k]) == 0)
					json_array_append(want, ev);
		}
		ck_assert_msg(json_equal(want, sc.kept ? sc.kept : json_array_size(want) ? NULL : want),
		    "the scan kept other events than inspect read");
		json_decref(want);
	} else {
		ck_assert_int_eq(e1.code, e2.code);
	}
	sess_scan_free(&sc);
	sess_image_free(&img);
}

START_TEST(scan_agrees_with_inspect)
{
	char torn[4096];

	assert_scan_agrees(open_turn);
	snprintf(torn, sizeof(torn), "%s{\"seq\":7,\"tim", open_turn);
	assert_scan_agrees(torn);
	assert_scan_agrees(HDR EV(0, "turn/start", "{\"turn\":1}") "garbage\n");
	assert_scan_agrees(HDR "garbage\n" EV(1, "turn/start", "{\"turn\":1}"));
	assert_scan_agrees(HDR EV(0, "turn/start", "{\"turn\":1}") EV(2, "turn/start", "{\"turn\":1}"));
	assert_scan_agrees(HDR EV(0, "mystery/event", "{}"));
	assert_scan_agrees(HDR "{\"seq\":0,\"time\":1,\"type\":\"future/thing\",\"ignorable\":true,\"data\":{}}\n");
	/* A turn opened by a line off the fast path is still an open turn (one closer). */
	assert_scan_agrees(HDR "{\"seq\":0,\"time\":1,\"type\":\"turn\\/start\",\"data\":{\"turn\":1}}\n");
	assert_scan_agrees(HDR "{\"time\":1,\"seq\":0,\"type\":\"turn/start\",\"data\":{\"turn\":1}}\n"
	    EV(1, "assistant/message", "{\"turn\":1,\"step\":1,\"id\":\"a\",\"content\":[],\"finish\":\"stop\"}"));
	assert_scan_agrees(HDR EV(0, "turn/start", "{\"turn\":1,\"x\":[1,2,{\"a\":\"\\u00e9\\n\"}]}")
	    EV(1, "turn/end", "{\"turn\":1,\"reason\":{\"kind\":\"completed\"}}"));
	/* A line our prefix matches but that is not JSON is still corruption. */
	assert_scan_agrees(HDR "{\"seq\":0,\"time\":1,\"type\":\"turn/start\",\"data\":{\"turn\":1,}}\n"
	    EV(1, "turn/end", "{\"turn\":1,\"reason\":{\"kind\":\"completed\"}}"));
	/* Lines the prefix and the JSON syntax let through, but load refuses: so must the scan. */
	const char *tricky[] = {
		"{\"seq\":0,\"time\":1,\"type\":\"turn/start\",\"data\":{\"turn\":1},\"seq\":0}\n",
		"{\"seq\":0,\"time\":1,\"type\":\"turn/start\",\"data\":{\"turn\":1,\"turn\":2}}\n",
		"{\"seq\":0,\"time\":1,\"type\":\"turn/start\",\"data\":{\"a\":{\"k\":1},\"b\":{\"k\":1}}}\n",
		"{\"seq\":0,\"time\":1,\"type\":\"turn/start\",\"data\":{\"t\\u0075rn\":1,\"turn\":2}}\n",
		"{\"seq\":0,\"time\":1,\"type\":\"turn/start\"}\n",
		"{\"seq\":0,\"time\":1,\"type\":\"turn/start\",\"data\":[]}\n",
		"{\"seq\":0,\"time\":99999999999999999999,\"type\":\"turn/start\",\"data\":{}}\n",
		"{\"seq\":0,\"time\":1,\"type\":\"turn/start\",\"data\":{\"n\":123456789012345678901}}\n",
		"{\"seq\":0,\"time\":1,\"type\":\"turn/start\",\"data\":{\"n\":1e999}}\n",
		"{\"seq\":0,\"time\":1,\"type\":\"turn/start\",\"data\":{\"n\":-1.5e10,\"m\":[true,false,null]}}\n",
		"{\"seq\":0,\"time\":1,\"type\":\"turn/start\",\"data\":{\"s\":\"\\ud800\"}}\n",
		"{\"seq\":0,\"time\":1,\"type\":\"turn/start\",\"data\":{\"s\":\"\\udc00\"}}\n",
		"{\"seq\":0,\"time\":1,\"type\":\"turn/start\",\"data\":{\"s\":\"nul \\u0000 ok\"}}\n",
		"{\"seq\":0,\"time\":1,\"type\":\"turn/start\",\"data\":{\"k\\u0000\":1}}\n",
	};
	for (size_t i = 0; i < sizeof(tricky) / sizeof(tricky[0]); i++) {
		char doc[1024];
		snprintf(doc, sizeof(doc), "%s%s%s", HDR, tricky[i], EV(1, "turn/end", "{\"turn\":1,\"reason\":{\"kind\":\"completed\"}}"));
		assert_scan_agrees(doc);
	}
	/* Lines of one learnt shape whose values are not what the shape allows: each must be judged
	 * as inspect judges it (the shape path hands them over, or refuses them the same way). */
	const char *shaped[] = {
		EV(1, "user/message", "{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"bad \\x escape\"}]}"),
		EV(1, "user/message", "{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"bad \xff utf8\"}]}"),
		EV(1, "user/message", "{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"a \\ud800 b\"}]}"),
		EV(1, "user/message", "{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"ok \\u00e9 \\\" q\"}]}"),
		EV(1, "user/message", "{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"ends \\\"}]}"),
		"{\"seq\":1,\"time\":-5,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\n",
		"{\"seq\":1,\"time\":1e5,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\n",
		"{\"seq\":1,\"time\":123456789012345678901,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\n",
		"{\"seq\":01,\"time\":1,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\n",
		"{\"seq\":2,\"time\":1,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\n",
		"{\"seq\":1,\"time\":1,\"type\":\"mystery/kind\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\n",
		"{\"seq\":1,\"time\":1,\"type\":\"turn/end\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\n",
		"{\"seq\":1,\"time\":1,\"type\":\"tu\\u0072n/end\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\n",
		"{\"seq\":1,\"time\":1,\"type\":\"user/message\",\"data\":{\"id\":7,\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\n",
		"{\"seq\":1,\"time\":1,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}",
	};
	for (size_t i = 0; i < sizeof(shaped) / sizeof(shaped[0]); i++) {
		char doc[2048];
		snprintf(doc, sizeof(doc), "%s%s%s%s", HDR,
		    EV(0, "user/message", "{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"learnt\"}]}"), shaped[i],
		    i % 2 ? "" : EV(2, "turn/start", "{\"turn\":1}"));
		assert_scan_agrees(doc);
	}
	assert_scan_agrees("");
}
END_TEST

/* A text that matches a learnt shape is one that the validator (and so jansson) takes. */
START_TEST(json_shape_match_implies_the_validator)
{
	const char *learnt = "{\"seq\":12,\"time\":345,\"type\":\"user/message\",\"data\":{\"id\":\"m\","
	    "\"content\":[{\"type\":\"text\",\"text\":\"hello world, sixteen+ bytes\"}],\"n\":[1.5,-2,true]}}";
	const size_t flags = JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL;
	struct json_shape sh;
	struct json_span v[JSON_SHAPE_MAX_VARS];
	unsigned seed = 4242;
	char m[512];
	int matched = 0;

	memset(&sh, 0, sizeof(sh));
	ck_assert(json_shape_learn(&sh, learnt, strlen(learnt), flags));
	ck_assert_uint_eq(sh.nvar, 8);	/* 12, 345, four strings, 1.5, -2 */
	ck_assert_ptr_eq(json_shape_match(&sh, learnt, learnt + strlen(learnt), v, JSON_SHAPE_MAX_VARS), learnt + strlen(learnt));
	ck_assert_int_eq(v[0].plain, 1);
	for (int k = 0; k < 100000; k++) {
		size_t len = strlen(learnt);
		memcpy(m, learnt, len + 1);
		test_mutate(m, len, 1 + k % 3, &seed, "\"\\{}[],: 0189.-eEu\x80\xc3\x01" "axyz");
		const char *end = json_shape_match(&sh, m, m + len, v, JSON_SHAPE_MAX_VARS);
		if (end == NULL)
			continue;
		matched++;
		size_t n = (size_t)(end - m);
		ck_assert_msg(json_scan_valid(m, n, flags), "the shape took what the validator refuses: %.*s", (int)n, m);
		json_t *j = json_loadb(m, n, flags, NULL);
		ck_assert_msg(j != NULL, "the shape took what jansson refuses: %.*s", (int)n, m);
		json_decref(j);
	}
	ck_assert_int_gt(matched, 1000);	/* the mutations do reach the shape path */
	/* Every prefix, in a buffer of exactly its size: no read past its end (ASan watches). */
	for (size_t n = 0; n <= strlen(learnt); n++) {
		char *cut = xmalloc(n ? n : 1);
		memcpy(cut, learnt, n);
		const char *end = json_shape_match(&sh, cut, cut + n, v, JSON_SHAPE_MAX_VARS);
		ck_assert(n == strlen(learnt) ? end == cut + n : end == NULL);
		free(cut);
	}
	json_shape_free(&sh);
	ck_assert_ptr_null(json_shape_match(&sh, learnt, learnt + strlen(learnt), v, JSON_SHAPE_MAX_VARS));	/* nothing learnt */
}
END_TEST

/* The validator's yes is jansson's yes, with the same flags; mutations hunt for the difference. */
static void
assert_scan_implies_jansson(const char *s, size_t n)
{
	const size_t flagsets[] = { 0, JSON_ALLOW_NUL, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, JSON_DECODE_ANY };

	for (size_t i = 0; i < sizeof(flagsets) / sizeof(flagsets[0]); i++) {
		if (!json_scan_valid(s, n, flagsets[i]))
			continue;
		json_error_t je;
		json_t *j = json_loadb(s, n, flagsets[i], &je);
		ck_assert_msg(j != NULL, "scan took what jansson refuses (flags %zx, %s): %.*s", flagsets[i], je.text,
		    (int)n, s);
		/* and the builder makes jansson's tree: the same values, types and key order */
		json_t *b = json_build(s, n, flagsets[i]);
		char *bj = jenc_dumps(j, NULL), *bb = jenc_dumps(b, NULL);
		ck_assert_msg(b != NULL && json_equal(j, b) && strcmp(bj, bb) == 0,
		    "json_build differs from jansson (flags %zx): %.*s", flagsets[i], (int)n, s);
		free(bj);
		free(bb);
		json_decref(b);
		json_decref(j);
	}
	ck_assert_ptr_null(json_scan_valid(s, n, JSON_ALLOW_NUL) ? NULL : json_build(s, n, JSON_ALLOW_NUL));
}

START_TEST(json_scan_says_yes_only_where_jansson_does)
{
	const char *docs[] = {
		"{\"a\":[1,-0,2.5,-3e+2,true,false,null,\"x\\u00e9\\ud83d\\ude00\\n\"],\"b\":{\"c\":{}},\"d\":[]}",
		"{\"a\":1,\"b\":{\"a\":1},\"c\":[{\"a\":1},{\"a\":2}]}",
		" [ \"s\" , 1 , { \"k\" : \"v\" } ] ",
		"{\"plain text that is longer than sixteen bytes\":\"and a value that is as long as that\"}",
		"\"top\"", "12", "{\"k\":\"\\u0000\"}", "{\"n\":123456789012345678}",
		/* the builder's cases: escaped keys (short and long), numbers, duplicates, white space */
		"{\"k\\\"q\":1,\"\\u00e9\\u20ac\\ud83d\\ude00\":[\"a\\tb\\\\c\\/d\\be\\ff\\rg\\nh\\u0001\\u0000i\"]}",
		"{\"a very long key with an escape \\n that does not fit the sixty-four bytes of the small key buffer\":{\"x\":\"\\u00e9\"}}",
		"[-0,-0.0,0.5,-123456789012345678,1E5,1e-5,2.5E+10,0.000001,123.456e-2,-9.75]",
		"{\"d\":1,\"e\":2,\"d\":3}", "\t[ {\"a\" :\t\"x\" } ,\r\n[ ] , { } ]\n", "[\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\\u00e9\"]",
	};
	unsigned seed = 777;
	char m[256];

	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
		assert_scan_implies_jansson(docs[i], strlen(docs[i]));
	ck_assert(json_scan_valid(docs[0], strlen(docs[0]), 0));
	ck_assert(json_scan_valid(docs[1], strlen(docs[1]), JSON_REJECT_DUPLICATES));
	ck_assert(!json_scan_valid(docs[4], strlen(docs[4]), 0));	/* a string at the top */
	ck_assert(json_scan_valid(docs[4], strlen(docs[4]), JSON_DECODE_ANY));
	for (int k = 0; k < 50000; k++) {
		const char *base = docs[k % 4];
		size_t len = strlen(base);
		memcpy(m, base, len + 1);
		test_mutate(m, len, 3, &seed, "\"\\{}[],: nultrfase0189.-+Eu\x80\xc3\x01");
		assert_scan_implies_jansson(m, len);
	}
}
END_TEST


/* A line that parses but lies (docs/contract.md §5.2, §11): every payload field a reader uses is checked once,
 * when the log is read; each of these is session_corrupt naming the field, by inspect and by the
 * scan that keeps the event. */
START_TEST(inspect_refuses_payloads_of_the_wrong_shape)
{
	static const struct {
		const char *type, *data, *field;
	} bad[] = {
		{ "turn/start", "{}", "turn is missing" },
		{ "turn/start", "{\"turn\":\"1\"}", "turn must be an integer from 0 to 2147483646" },
		{ "turn/start", "{\"turn\":2147483647}", "turn must be an integer from 0 to 2147483646" },
		{ "step/start", "{\"turn\":1,\"step\":-1}", "step must be an integer from 0 to 2147483646" },
		{ "subagent/settled", "{\"epoch\":9999999999,\"end\":\"completed\"}", "epoch must be an integer" },
		{ "user/message", "{\"id\":\"m\",\"content\":[{\"text\":\"x\"}],\"source\":{\"kind\":\"user\"}}",
		    "content[0].type is missing" },
		{ "user/message", "{\"id\":\"m\",\"content\":[{\"type\":7}],\"source\":{\"kind\":\"user\"}}",
		    "content[0].type must be a string" },
		{ "user/message", "{\"id\":\"m\",\"content\":[{\"type\":\"text\"}],\"source\":{\"kind\":\"user\"}}",
		    "content[0].text is missing" },
		{ "user/message", "{\"id\":\"m\",\"content\":[\"x\"],\"source\":{\"kind\":\"user\"}}",
		    "content[0] must be an object" },
		{ "user/message", "{\"id\":\"m\",\"content\":[{\"type\":\"image\",\"mimeType\":\"image/png\",\"bytes\":1}],"
		    "\"source\":{\"kind\":\"user\"}}", "content[0].blob is missing" },
		{ "user/message", "{\"id\":\"m\",\"content\":[{\"type\":\"image\",\"mimeType\":\"image/png\",\"blob\":\"b\","
		    "\"bytes\":-1}],\"source\":{\"kind\":\"user\"}}", "content[0].bytes must be an integer" },
		{ "user/message", "{\"id\":\"m\",\"content\":{},\"source\":{\"kind\":\"user\"}}",
		    "content must be an array" },
		{ "user/message", "{\"id\":\"m\",\"content\":[],\"source\":{}}", "source.kind is missing" },
		{ "user/message", "{\"id\":\"m\",\"content\":[],\"source\":{\"kind\":\"subagent-settled\","
		    "\"settlement\":{\"epoch\":1}}}", "source.settlement.childId is missing" },
		{ "user/message", "{\"id\":\"m\",\"content\":[{\"type\":\"resource\",\"resource\":{\"text\":1}}],"
		    "\"source\":{\"kind\":\"user\"}}", "content[0].resource.text must be a string" },
		{ "assistant/message", "{\"turn\":1,\"step\":1,\"id\":\"a\",\"content\":[{\"type\":\"text\","
		    "\"text\":null}],\"finish\":\"stop\"}", "content[0].text must be a string" },
		{ "assistant/message", "{\"turn\":1,\"step\":1,\"id\":\"a\",\"content\":[{\"type\":\"reasoning\"}],"
		    "\"finish\":\"stop\"}", "content[0].text is missing" },
		{ "assistant/message", "{\"turn\":1,\"step\":1,\"id\":\"a\",\"content\":[{\"type\":\"tool-call\","
		    "\"callId\":\"c\",\"name\":\"n\"}],\"finish\":\"tool_calls\"}", "content[0].arguments is missing" },
		{ "assistant/message", "{\"turn\":1,\"step\":1,\"id\":\"a\",\"content\":[{\"type\":\"image\"}],"
		    "\"finish\":\"stop\"}", "content[0].type names no known block" },
		{ "tool/call", "{\"turn\":1,\"step\":1,\"callId\":\"c\",\"name\":\"n\",\"arguments\":{}}",
		    "arguments must be a string" },
		{ "tool/result", "{\"turn\":1,\"step\":1,\"callId\":\"c\",\"name\":\"n\",\"content\":[],"
		    "\"isError\":false}", "content must not be empty" },
		{ "tool/result", "{\"turn\":1,\"step\":1,\"callId\":\"c\",\"name\":\"n\",\"content\":[{\"type\":"
		    "\"text\",\"text\":\"x\"}],\"isError\":0}", "isError must be a boolean" },
		{ "tool/result", "{\"turn\":1,\"step\":1,\"callId\":\"c\",\"name\":\"n\",\"content\":[{\"type\":"
		    "\"text\",\"text\":\"x\"}],\"isError\":true,\"error\":{}}", "error.code is missing" },
		{ "turn/end", "{\"turn\":1,\"reason\":\"completed\"}", "reason must be an object" },
		{ "subagent/settled", "{\"epoch\":1}", "end is missing" },
		{ "session/mode", "{\"mode\":3}", "mode must be a string" },
		{ "permission/rule", "{\"rule\":\"edit:*\",\"allow\":\"yes\"}", "allow must be a boolean" },
		{ "job/started", "{\"jobId\":\"job-1\"}", "command is missing" },
		{ "job/ended", "{\"jobId\":\"job-1\",\"exit\":null,\"signal\":9}", "signal must be a string" },
		{ "team/task", "{\"version\":1,\"task\":{\"id\":\"task-1\",\"revision\":1,\"subject\":\"s\","
		    "\"description\":\"d\",\"status\":\"pending\",\"blockedBy\":[1],\"writeScopes\":[]}}",
		    "task.blockedBy[0] must be a string" },
		{ "team/message/queued", "{\"version\":1,\"message\":{\"id\":\"msg-1\",\"senderName\":\"a\","
		    "\"targetName\":\"b\"}}", "message.content is missing" },
	};
	char doc[2048];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		static const char *const keep_all[] = { "turn/start", "step/start", "user/message", "assistant/message",
			"tool/call", "tool/result", "turn/end", "subagent/settled", "team/task",
			"team/message/queued", "session/mode", "permission/rule", "job/started", "job/ended", NULL };
		struct sess_image img;
		struct sess_scan sc;
		struct err e;

		snprintf(doc, sizeof(doc), "%s{\"seq\":0,\"time\":1,\"type\":\"%s\",\"data\":%s}\n", HDR,
		    bad[i].type, bad[i].data);
		err_clear(&e);
		ck_assert_int_eq(sess_inspect_buf(doc, strlen(doc), &img, &e), -1);
		ck_assert_int_eq(e.code, ERR_SESSION_CORRUPT);
		ck_assert_msg(strstr(e.msg, bad[i].field) != NULL, "%s: %s", bad[i].field, e.msg);
		sess_image_free(&img);
		err_clear(&e);
		ck_assert_int_eq(sess_scan_buf(doc, strlen(doc), keep_all, &sc, &e), -1);
		ck_assert_int_eq(e.code, ERR_SESSION_CORRUPT);
		sess_scan_free(&sc);
	}
	/* The same events with their fields right are taken, unknown user blocks included. */
	snprintf(doc, sizeof(doc), "%s%s%s", HDR,
	    EV(0, "user/message", "{\"id\":\"m\",\"content\":[{\"type\":\"audio\",\"data\":\"\"},{\"type\":"
		"\"resource_link\",\"uri\":\"file:///a\"}],\"source\":{\"kind\":\"user\"}}"),
	    EV(1, "subagent/settled", "{\"epoch\":1,\"end\":\"completed\"}"));
	struct sess_image img;
	struct err e;
	err_clear(&e);
	ck_assert_int_eq(sess_inspect_buf(doc, strlen(doc), &img, &e), 0);
	sess_image_free(&img);
}
END_TEST

/* The file scan reads in chunks: across chunk boundaries, a line longer than a chunk, an open turn
 * at the end and a torn last line, it gives what the whole-buffer scan and inspect give. */
START_TEST(scan_file_in_chunks_agrees_with_the_buffer_scan)
{
	static const char *const keep[] = { "turn/start", "subagent/settled", NULL };
	char dir[64], path[128];
	struct buf b;
	int64_t seq = 0;

	test_mkdtemp(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/log.jsonl", dir);
	for (int variant = 0; variant < 3; variant++) {
		buf_init(&b);
		seq = 0;
		buf_puts(&b, HDR);
		for (int t = 1; t <= 4000; t++) {
			buf_printf(&b, "{\"seq\":%lld,\"time\":1,\"type\":\"turn/start\",\"data\":{\"turn\":%d}}\n", (long long)seq++, t);
			buf_printf(&b, "{\"seq\":%lld,\"time\":1,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":"
			    "[{\"type\":\"text\",\"text\":\"%0*d\"}],\"source\":{\"kind\":\"user\"}}}\n", (long long)seq++,
			    t == 2000 ? 1500000 : 40 + t % 300, t);
			if (t < 4000 || variant == 0)
				buf_printf(&b, "{\"seq\":%lld,\"time\":1,\"type\":\"turn/end\",\"data\":{\"turn\":%d,\"reason\":"
				    "{\"kind\":\"completed\"}}}\n", (long long)seq++, t);
			if (t % 1000 == 0)
				buf_printf(&b, "{\"seq\":%lld,\"time\":1,\"type\":\"subagent/settled\",\"data\":{\"epoch\":%d,"
				    "\"end\":\"completed\"}}\n", (long long)seq++, t);
		}
		if (variant == 2)
			buf_puts(&b, "{\"seq\":99999,\"time\":1,\"ty");	/* torn */
		test_write_file(path, b.data, b.len);
		struct sess_scan whole, chunked;
		struct sess_image img;
		struct err e1, e2, e3;
		err_clear(&e1);
		err_clear(&e2);
		err_clear(&e3);
		ck_assert_int_eq(sess_scan_buf(b.data, b.len, keep, &whole, &e1), 0);
		ck_assert_int_eq(sess_scan_file(path, keep, &chunked, &e2), 0);
		ck_assert_int_eq(sess_inspect_buf(b.data, b.len, &img, &e3), 0);
		ck_assert_int_eq(whole.valid_len, chunked.valid_len);
		ck_assert_int_eq(img.valid_len, chunked.valid_len);
		ck_assert_int_eq(whole.nevents, chunked.nevents);
		ck_assert_int_eq(whole.torn, chunked.torn);
		ck_assert_int_eq(chunked.torn, variant == 2);
		ck_assert_uint_eq(whole.nclosers, chunked.nclosers);
		ck_assert_uint_eq(img.nclosers, chunked.nclosers);
		ck_assert_uint_eq(chunked.nclosers, variant == 0 ? 0 : 1);
		ck_assert(json_equal(whole.kept, chunked.kept));
		ck_assert_uint_eq(json_array_size(chunked.kept), 4000 + 4);
		sess_scan_free(&whole);
		sess_scan_free(&chunked);
		sess_image_free(&img);
		buf_free(&b);
	}
	test_rmtree(dir);
}
END_TEST

/* The events a stream gives (session/stream.h), as trees; *error: why it ended early, or "". */
static json_t *
stream_all(const char *path, const char *const *keep, off_t limit, char *error, size_t size)
{
	struct sess_stream *st;
	json_t *all = json_array();
	const char *line;
	size_t len;
	struct err e;

	err_clear(&e);
	ck_assert_ptr_nonnull(st = sess_stream_open(path, keep, limit, &e));
	while ((line = sess_stream_next(st, &len)) != NULL) {
		json_t *ev = sess_stream_tree(st, line, len);
		ck_assert_ptr_nonnull(ev);
		ck_assert_uint_eq(strlen(line), len);	/* a NUL after it */
		json_array_append_new(all, ev);
	}
	snprintf(error, size, "%s", sess_stream_error(st) ? sess_stream_error(st) : "");
	sess_stream_close(st);
	return all;
}

/* A stream reads a file in bounded pieces (64 events, 1 MiB) and gives what the scan keeps, in
 * order: across pieces, a line longer than a piece, an open turn and a torn last line; a line that
 * does not pass ends it there with the scan's reason; a symlink is not followed. */
START_TEST(stream_gives_what_the_scan_keeps_in_bounded_pieces)
{
	static const char *const keep[] = { "user/message", "subagent/settled", NULL };
	char dir[64], path[128], link[128], error[256];
	struct buf b;
	int64_t seq;
	struct err e;

	test_mkdtemp(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/log.jsonl", dir);
	for (int variant = 0; variant < 4; variant++) {
		buf_init(&b);
		seq = 0;
		buf_puts(&b, HDR);
		for (int t = 1; t <= 3000; t++) {
			buf_printf(&b, "{\"seq\":%lld,\"time\":1,\"type\":\"turn/start\",\"data\":{\"turn\":%d}}\n", (long long)seq++, t);
			if (variant == 3 && t == 1500)
				buf_printf(&b, "{\"seq\":%lld,\"time\":1,\"type\":\"user/message\",\"data\":{}}\n", (long long)seq++);
			buf_printf(&b, "{\"seq\":%lld,\"time\":1,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":"
			    "[{\"type\":\"text\",\"text\":\"%0*d\"}],\"source\":{\"kind\":\"user\"}}}\n", (long long)seq++,
			    t == 1000 ? 2500000 : 40 + t % 300, t);
			if (t < 3000 || variant == 0)
				buf_printf(&b, "{\"seq\":%lld,\"time\":1,\"type\":\"turn/end\",\"data\":{\"turn\":%d,\"reason\":"
				    "{\"kind\":\"completed\"}}}\n", (long long)seq++, t);
			if (t % 1000 == 0)
				buf_printf(&b, "{\"seq\":%lld,\"time\":1,\"type\":\"subagent/settled\",\"data\":{\"epoch\":%d,"
				    "\"end\":\"completed\"}}\n", (long long)seq++, t);
		}
		if (variant == 2)
			buf_puts(&b, "{\"seq\":99999,\"time\":1,\"ty");	/* torn */
		test_write_file(path, b.data, b.len);
		struct sess_scan whole;
		err_clear(&e);
		int rc = sess_scan_buf(b.data, b.len, keep, &whole, &e);
		json_t *got = stream_all(path, keep, -1, error, sizeof(error));
		if (variant < 3) {
			ck_assert_int_eq(rc, 0);
			ck_assert_str_eq(error, "");
			ck_assert_uint_eq(json_array_size(got), 3000 + 3);
			ck_assert(json_equal(whole.kept, got));
			/* with a limit: the events whose lines start before it, a prefix of the rest */
			off_t limit = (off_t)(b.len / 3);
			size_t want = 0;
			for (const char *p = b.data; p && p < b.data + limit; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
				want += strncmp(strstr(p, "\"type\":"), "\"type\":\"user/message\"", 21) == 0 ||
				    strncmp(strstr(p, "\"type\":"), "\"type\":\"subagent/settled\"", 25) == 0;
			json_t *part = stream_all(path, keep, limit, error, sizeof(error));
			ck_assert_str_eq(error, "");
			ck_assert_uint_gt(want, 100);
			ck_assert_uint_eq(json_array_size(part), want);
			for (size_t k = 0; k < want; k++)
				ck_assert(json_equal(json_array_get(part, k), json_array_get(got, k)));
			json_decref(part);
		} else {
			/* the scan refuses the file; the stream gave what came before the bad line */
			ck_assert_int_eq(rc, -1);
			ck_assert_str_eq(error, e.msg);
			ck_assert_uint_eq(json_array_size(got), 1499 + 1);
		}
		json_decref(got);
		sess_scan_free(&whole);
		buf_free(&b);
	}
	snprintf(link, sizeof(link), "%s/link.jsonl", dir);
	ck_assert_int_eq(symlink(path, link), 0);
	err_clear(&e);
	ck_assert_ptr_null(sess_stream_open(link, keep, -1, &e));
	ck_assert_int_eq(e.code, ERR_SESSION_LOG_IO);
	err_clear(&e);
	snprintf(link, sizeof(link), "%s/none.jsonl", dir);
	ck_assert_ptr_null(sess_stream_open(link, keep, -1, &e));
	ck_assert_int_eq(e.code, ERR_UNKNOWN_SESSION);
	test_rmtree(dir);
}
END_TEST

/* What inspect says of a file's bytes, streamed from a file (the load's way) and whole. */
/* A streamed inspect that checks the second half ahead (from any size) says what one in order
 * says: the same verdict, message and image. */
static void
inspect_split_agrees(int fd, const char *path, int rs, const struct sess_image *a, const struct err *stream_e)
{
	struct sess_image c;
	struct err ce;

	err_clear(&ce);
	ck_assert_int_eq(sess_inspect_stream_split(fd, path, NULL, 1, &c, &ce), rs);
	if (rs < 0) {
		ck_assert_str_eq(ce.msg, stream_e->msg);
		ck_assert_int_eq(ce.code, stream_e->code);
		return;
	}
	ck_assert_uint_eq(c.nevents, a->nevents);
	ck_assert_uint_eq(c.nclosers, a->nclosers);
	ck_assert_uint_eq(c.base, a->base);
	ck_assert_int_eq(c.valid_len, a->valid_len);
	ck_assert_int_eq(c.torn, a->torn);
	ck_assert_mem_eq(c.types, a->types, a->nevents + a->nclosers);
	ck_assert_mem_eq(c.offs, a->offs, (a->nevents + 1) * sizeof(*a->offs));
	ck_assert(json_equal(c.events, a->events));
	sess_image_free(&c);
}

static int
inspect_both(const char *data, struct err *stream_e, struct err *whole_e)
{
	char dir[64], path[128];
	struct sess_image a, b;
	int fd, rs, rw;

	test_mkdtemp(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/s.jsonl", dir);
	test_write_file(path, data, strlen(data));
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	err_clear(stream_e);
	err_clear(whole_e);
	rs = sess_inspect_stream(fd, path, NULL, &a, stream_e);
	rw = sess_inspect_buf(data, strlen(data), &b, whole_e);
	ck_assert_int_eq(rs, rw);
	inspect_split_agrees(fd, path, rs, &a, stream_e);
	if (rs == 0) {
		ck_assert_uint_eq(a.nevents, b.nevents);
		ck_assert_uint_eq(a.nclosers, b.nclosers);
		ck_assert_int_eq(a.valid_len, b.valid_len);
		ck_assert_mem_eq(a.types, b.types, a.nevents + a.nclosers);
		for (size_t i = a.base; i < a.nevents + a.nclosers; i++)
			ck_assert(json_equal(json_array_get(a.events, i - a.base), json_array_get(b.events, i)));
		sess_image_free(&a);
		sess_image_free(&b);
	} else {
		ck_assert_str_eq(stream_e->msg, whole_e->msg);
	}
	close(fd);
	test_rmtree(dir);
	return rs;
}

/*
 * A streamed inspect checks a line of a shape it has seen by its bytes (session/checked.c); a
 * line that differs only where the full check looks (a "type" value, a count out of range, the
 * seq) must still be refused, with the full check's message.
 */
START_TEST(streamed_inspect_refuses_what_the_full_check_refuses_after_lines_of_its_shape)
{
	static const struct {
		const char *good, *bad, *msg;	/* bad: the same shape as good, one value apart */
	} cases[] = {
		{ "\"turn/start\",\"data\":{\"turn\":1}", "\"turn/start\",\"data\":{\"turn\":2147483647}",
		    "turn must be an integer from 0 to 2147483646" },
		/* -0 is the integer 0 to jansson, a good count; it says nothing of the range */
		{ "\"turn/start\",\"data\":{\"turn\":-0}", "\"turn/start\",\"data\":{\"turn\":2147483647}",
		    "turn must be an integer from 0 to 2147483646" },
		{ "\"step/start\",\"data\":{\"turn\":1,\"step\":1}", "\"step/start\",\"data\":{\"turn\":1,\"step\":-1}",
		    "step must be an integer from 0 to 2147483646" },
		{ "\"turn/start\",\"data\":{\"turn\":1}", "\"step/start\",\"data\":{\"turn\":1}", "step is missing" },
		{ "\"turn/start\",\"data\":{\"turn\":1}", "\"turn/startx\",\"data\":{\"turn\":1}", "unknown type" },
		{ "\"turn/start\",\"data\":{\"turn\":1}", "\"turn\\/start\",\"data\":{\"turn\":-1}",
		    "turn must be an integer" },
		{ "\"assistant/message\",\"data\":{\"turn\":1,\"step\":1,\"id\":\"a\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"finish\":\"stop\"}",
		    "\"assistant/message\",\"data\":{\"turn\":1,\"step\":1,\"id\":\"a\",\"content\":[{\"type\":\"image\",\"text\":\"x\"}],\"finish\":\"stop\"}",
		    "content[0].type names no known block" },
		{ "\"assistant/message\",\"data\":{\"turn\":1,\"step\":1,\"id\":\"a\",\"content\":[{\"type\":\"reasoning\",\"text\":\"x\"}],\"finish\":\"stop\"}",
		    "\"assistant/message\",\"data\":{\"turn\":1,\"step\":1,\"id\":\"a\",\"content\":[{\"type\":\"tool-call\",\"text\":\"x\"}],\"finish\":\"stop\"}",
		    "content[0].callId is missing" },
		{ "\"assistant/message\",\"data\":{\"turn\":1,\"step\":1,\"id\":\"a\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"finish\":\"stop\"}",
		    "\"assistant/message\",\"data\":{\"turn\":1,\"step\":1,\"id\":\"a\",\"content\":[{\"typ\\u0065\":\"image\",\"text\":\"x\"}],\"finish\":\"stop\"}",
		    "content[0].type names no known block" },
		{ "\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"source\":{\"kind\":\"user\"}}",
		    "\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"resource\",\"text\":\"x\"}],\"source\":{\"kind\":\"user\"}}",
		    "content[0].resource is missing" },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct buf b;
		struct err se, we;
		buf_init(&b);
		buf_puts(&b, HDR);
		for (int i = 0; i < 6; i++) {
			char line[512];
			snprintf(line, sizeof(line), "{\"seq\":%d,\"time\":%d,\"type\":%s}\n", i, 100 + i,
			    i == 4 ? cases[k].bad : cases[k].good);
			buf_puts(&b, line);
		}
		buf_append(&b, "", 1);
		ck_assert_int_eq(inspect_both(b.data, &se, &we), -1);
		ck_assert_msg(strstr(se.msg, cases[k].msg) != NULL, "case %zu: %s", k, se.msg);
		ck_assert_msg(strstr(se.msg, "event 4") != NULL, "case %zu: %s", k, se.msg);
		buf_free(&b);
	}
	/* A seq out of step in a line of a known shape: the gap, as the full check words it. */
	struct err se, we;
	ck_assert_int_eq(inspect_both(HDR EV(0, "turn/start", "{\"turn\":1}") EV(1, "turn/start", "{\"turn\":1}")
	    EV(3, "turn/start", "{\"turn\":1}"), &se, &we), -1);
	ck_assert_str_eq(se.msg, "event seq gap: expected 2");
	/* The same lines in order are taken, and the image is the whole inspect's. */
	ck_assert_int_eq(inspect_both(open_turn, &se, &we), 0);
}
END_TEST

/* The fast path is there: a learnt shape takes a line with other text and numbers in range. */
/* The one shape cache at both levels: a line of a shape learnt in full gets the full verdict only
 * when every value is as checked.h says; the envelope asks only seq, time and the event type. */
static int
checked_try(struct sess_checked *c, const char *l, int64_t seq, int level)
{
	char line[1024];
	size_t n = strlen(l);
	int code = 0;

	memcpy(line, l, n);
	line[n] = '\n';
	const char *end = sess_checked_match(c, line, line + n + 1, seq, level, &code);
	ck_assert(end == NULL || end == line + n);
	return end ? code : 0;
}

START_TEST(checked_shapes_take_lines_of_a_learnt_shape)
{
	static const char l0[] = "{\"seq\":9,\"time\":5,\"type\":\"tool/result\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c\",\"name\":\"grep\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}],\"isError\":false}}";
	static const char l1[] = "{\"seq\":10,\"time\":1764000000000,\"type\":\"tool/result\",\"data\":{\"turn\":77,\"step\":3,\"callId\":\"call_\\u00e9\\n\",\"name\":\"read\",\"content\":[{\"type\":\"text\",\"text\":\"long \\\"text\\\" \\u2603\"}],\"isError\":false}}";
	static const char l2[] = "{\"seq\":11,\"time\":5,\"type\":\"tool/result\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c\",\"name\":\"grep\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}],\"isError\":true}}";
	static const char l3[] = "{\"seq\":11,\"time\":5,\"type\":\"tool/result\",\"data\":{\"turn\":1,\"step\":1.5,\"callId\":\"c\",\"name\":\"grep\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}],\"isError\":false}}";
	static const char l4[] = "{\"seq\":11,\"time\":5,\"type\":\"tool/result\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c\",\"name\":\"grep\",\"content\":[{\"type\":\"text\",\"text\":\"bad \xff\"}],\"isError\":false}}";
	static const char l5[] = "{\"seq\":11,\"time\":5,\"type\":\"tool/result\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c\",\"name\":\"grep\",\"content\":[{\"type\":\"image\",\"text\":\"a\"}],\"isError\":false}}";
	static const char l6[] = "{\"seq\":11,\"time\":5,\"type\":\"tool/resulT\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c\",\"name\":\"grep\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}],\"isError\":false}}";
	static const char l7[] = "{\"seq\":11,\"time\":-5,\"type\":\"tool/result\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c\",\"name\":\"grep\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}],\"isError\":false}}";
	static const char odd[] = "{\"seq\":9,\"time\":5,\"data\":{\"type\":\"x\"},\"type\":\"user/message\"}";
	struct sess_checked c;
	int code = SESS_EV_TOOL_RESULT, full = SESS_CHECK_FULL, env = SESS_CHECK_ENVELOPE;
	char line[1024];

	sess_checked_init(&c);
	ck_assert_int_eq(checked_try(&c, l0, 9, env), 0);	/* nothing learnt yet */
	ck_assert_int_eq(sess_checked_learn(&c, l0, sizeof(l0) - 1, code, full), 1);
	ck_assert_int_eq(checked_try(&c, l0, 9, full), code);
	ck_assert_int_eq(checked_try(&c, l1, 10, full), code);	/* a large time: it is no count */
	ck_assert_int_eq(checked_try(&c, l1, 11, full), 0);	/* not the expected seq */
	ck_assert_int_eq(checked_try(&c, l2, 11, full), 0);	/* another shape (true) */
	ck_assert_int_eq(checked_try(&c, l3, 11, full), 0);	/* a real where a count was */
	ck_assert_int_eq(checked_try(&c, l3, 11, env), code);	/* the envelope asks no count */
	ck_assert_int_eq(checked_try(&c, l4, 11, full), 0);	/* not UTF-8 */
	ck_assert_int_eq(checked_try(&c, l4, 11, env), 0);
	ck_assert_int_eq(checked_try(&c, l5, 11, full), 0);	/* another block variant */
	ck_assert_int_eq(checked_try(&c, l5, 11, env), code);
	ck_assert_int_eq(checked_try(&c, l6, 11, env), 0);	/* another event type */
	ck_assert_int_eq(checked_try(&c, l7, 11, env), 0);	/* a time that is no plain integer */
	/* The expected seq counts up through a carry, as the text the writer writes. */
	for (int seq = 95; seq <= 1001; seq++) {
		snprintf(line, sizeof(line), "{\"seq\":%d%s", seq, strchr(l0, ','));
		ck_assert_int_eq(checked_try(&c, line, seq, full), code);
	}
	/* A shape learnt at the envelope never vouches in full. */
	sess_checked_free(&c);
	ck_assert_int_eq(sess_checked_learn(&c, l3, sizeof(l3) - 1, code, env), 1);
	ck_assert_int_eq(checked_try(&c, l3, 11, env), code);
	ck_assert_int_eq(checked_try(&c, l3, 11, full), 0);
	/* Not JSON: the learner says so and keeps nothing; another layout is not learnt. */
	ck_assert_int_eq(sess_checked_learn(&c, "{\"seq\":1,", 9, code, env), 0);
	ck_assert_int_eq(sess_checked_learn(&c, odd, sizeof(odd) - 1, SESS_EV_USER_MESSAGE, full), 1);
	ck_assert_int_eq(checked_try(&c, odd, 9, env), 0);
	sess_checked_free(&c);
}
END_TEST

/* A replay's cursor reads only the types asked for, passing over the other lines; a file changed
 * under it (cut short, or a wanted line overwritten) ends it with a logged error, never a wrong
 * or half-read event. */
START_TEST(cursor_reads_only_the_types_asked_and_ends_where_the_file_lies)
{
	static const char *const only[] = { "tool/call", "tool/result", NULL };
	char dir[64], state[128], path[256];
	struct sess_env env;
	struct sess_store store;
	struct sess_cursor *c;
	struct err e;
	json_t *ev;
	char *said;
	int n;

	test_mkdtemp(dir, sizeof(dir));
	snprintf(state, sizeof(state), "%s/state", dir);
	err_clear(&e);
	ck_assert_int_eq(sess_env_init(&env, state, SESS_SYNC_NONE, 1, NULL, &e), 0);
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, ID);
	test_write_file(path, open_turn, strlen(open_turn));
	sess_store_init(&store, &env);
	struct sess *s = sess_store_load(&store, ID, &e);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(s->nev, 11);		/* 7 read, then the 4 closers the load appended */
	/* Of the first 7: the tool/call, tool/result and tool/call at 4, 5 and 6. */
	c = sess_cursor_new_only(s, 0, 7, only);
	int64_t want[] = { 4, 5, 6 };
	for (n = 0; (ev = sess_cursor_next(c)) != NULL; n++) {
		ck_assert_int_lt(n, 3);
		ck_assert_int_eq(json_integer_value(json_object_get(ev, "seq")), want[n]);
		json_decref(ev);
	}
	ck_assert_int_eq(n, 3);
	sess_cursor_free(c);
	/* Cut inside the lines it passes over: it ends there, saying why. */
	c = sess_cursor_new_only(s, 0, 7, only);
	ck_assert_int_eq(truncate(path, (off_t)(strstr(open_turn, "\"seq\":2,") - open_turn) + 5), 0);
	test_log_capture_start();
	ck_assert_ptr_null(sess_cursor_next(c));
	said = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(said, "no longer in the file as it was written"));
	free(said);
	sess_cursor_free(c);
	/* A wanted line overwritten with another seq: not returned. */
	char *bad = xstrdup(open_turn);
	char *at = strstr(bad, "\"seq\":4,");
	at[6] = '9';
	test_write_file(path, bad, strlen(bad));
	c = sess_cursor_new_only(s, 0, 7, only);
	test_log_capture_start();
	ck_assert_ptr_null(sess_cursor_next(c));
	said = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(said, "event 4 is no longer in the file as it was written"));
	free(said);
	sess_cursor_free(c);
	free(bad);
	/* A wanted line rewritten with its seq but a payload no load takes (the tool/call at 4 with no
	 * name): a replay reader gets the line as written, and its tree is refused with the reason;
	 * written another way (its keys reordered), the tree is refused as it is read. */
	for (int form = 0; form < 2; form++) {
		const char *lying = form == 0 ?
		    "{\"seq\":4,\"time\":14,\"type\":\"tool/call\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c1\",\"arguments\":\"{}\"}}\n" :
		    "{\"time\":14,\"seq\":4,\"type\":\"tool/call\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c1\",\"arguments\":\"{}\"}}\n";
		const char *line;
		size_t len;
		struct buf b;
		char *four = strstr(open_turn, "{\"seq\":4,"), *five = strstr(open_turn, "{\"seq\":5,");
		buf_init(&b);
		buf_append(&b, open_turn, (size_t)(four - open_turn));
		buf_puts(&b, lying);
		buf_puts(&b, five);
		test_write_file(path, b.data, b.len);
		buf_free(&b);
		c = sess_cursor_new_only(s, 0, 7, only);
		test_log_capture_start();
		line = sess_cursor_next_line(c, &len, &ev, 1);
		if (form == 0) {
			ck_assert_ptr_nonnull(line);	/* the writer's form: the line itself */
			ck_assert_ptr_null(ev);
			ck_assert_ptr_null(sess_cursor_tree(c, line, len));
		} else {
			ck_assert_ptr_null(line);
			ck_assert_ptr_null(ev);
		}
		ck_assert_ptr_null(sess_cursor_next_line(c, &len, &ev, 1));	/* it ended there */
		ck_assert_ptr_null(ev);
		said = test_log_capture_stop();
		ck_assert_msg(strstr(said, "event 4 is no longer in the file as it was written: event 4 (tool/call): name is missing") != NULL, "%s", said);
		free(said);
		sess_cursor_free(c);
	}
	sess_store_free(&store);
	sess_env_free(&env);
	test_rmtree(dir);
}
END_TEST

/* The log of split_file below: turns of a user message, a tool call and its result, an answer. */
static void
split_log(struct buf *b, int turns, int unknown_at)
{
	long long seq = 0;

	buf_puts(b, HDR);
	for (int t = 1; t <= turns; t++) {
		buf_printf(b, "{\"seq\":%lld,\"time\":%d,\"type\":\"turn/start\",\"data\":{\"turn\":%d}}\n", seq++, t, t);
		buf_printf(b, "{\"seq\":%lld,\"time\":%d,\"type\":\"user/message\",\"data\":{\"id\":\"m%d\",\"content\":[{\"type\":\"text\",\"text\":\"question %d \\u00e9\"}],\"source\":{\"kind\":\"user\"}}}\n", seq++, t, t, t);
		if (t == unknown_at)
			buf_printf(b, "{\"seq\":%lld,\"time\":%d,\"type\":\"future/thing\",\"ignorable\":true,\"data\":{}}\n", seq++, t);
		buf_printf(b, "{\"seq\":%lld,\"time\":%d,\"type\":\"step/start\",\"data\":{\"turn\":%d,\"step\":1}}\n", seq++, t, t);
		buf_printf(b, "{\"seq\":%lld,\"time\":%d,\"type\":\"assistant/message\",\"data\":{\"turn\":%d,\"step\":1,\"id\":\"a%d\",\"content\":[{\"type\":\"text\",\"text\":\"answer %d\"}],\"finish\":\"stop\"}}\n", seq++, t, t, t, t);
		buf_printf(b, "{\"seq\":%lld,\"time\":%d,\"type\":\"step/end\",\"data\":{\"turn\":%d,\"step\":1}}\n", seq++, t, t);
		if (t < turns)
			buf_printf(b, "{\"seq\":%lld,\"time\":%d,\"type\":\"turn/end\",\"data\":{\"turn\":%d,\"reason\":{\"kind\":\"completed\"}}}\n", seq++, t, t);
	}
}

/* Inspects bytes streamed in order and split (the second half checked ahead): the same. */
static void
split_agrees(const char *dir, const char *data, size_t len)
{
	char path[128];
	struct sess_image a;
	struct err e;
	int fd, rs;

	snprintf(path, sizeof(path), "%s/split.jsonl", dir);
	test_write_file(path, data, len);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	err_clear(&e);
	rs = sess_inspect_stream(fd, path, NULL, &a, &e);
	inspect_split_agrees(fd, path, rs, &a, &e);
	if (rs == 0)
		sess_image_free(&a);
	close(fd);
}

/*
 * The second half checked ahead counts only where the read in order meets it: a log cut, torn,
 * gapped, or corrupted anywhere (most often in the second half, where the guess is) gives the
 * verdict, message and image of the read in order.
 */
START_TEST(streamed_inspect_split_agrees_with_the_read_in_order)
{
	char dir[64];
	struct buf b;
	unsigned seed = 7;

	test_mkdtemp(dir, sizeof(dir));
	buf_init(&b);
	split_log(&b, 200, 150);
	split_agrees(dir, b.data, b.len);	/* whole: an open last turn, an unknown ignorable event */
	split_agrees(dir, b.data, b.len - 1);	/* no newline at the end: a torn last line */
	split_agrees(dir, b.data, b.len / 2);	/* cut in the middle of a line */
	{
		/* a seq gap at the first line of the second half */
		char *mid = (char *)memchr(b.data + b.len / 2 - 1, '\n', b.len / 2) + 1;
		char *copy = xmalloc(b.len + 8);
		size_t head = (size_t)(mid - b.data);
		memcpy(copy, b.data, head);
		memcpy(copy + head, "{\"seq\":9", 8);
		memcpy(copy + head + 8, mid + 8, b.len - head - 8);
		split_agrees(dir, copy, b.len);
		/* the same line without its newline before it: one line across the middle */
		memcpy(copy, b.data, b.len);
		copy[head - 1] = ' ';
		split_agrees(dir, copy, b.len);
		free(copy);
	}
	for (int k = 0; k < 200; k++) {
		char *copy = xmalloc(b.len);
		memcpy(copy, b.data, b.len);
		/* a byte or two changed, most often past the middle */
		size_t from = k % 4 == 0 ? 0 : b.len / 2;
		test_mutate(copy + from, b.len - from, 1 + k % 2, &seed, "{}[]\",:0123456789ax\\\n ");
		split_agrees(dir, copy, b.len);
		free(copy);
	}
	buf_free(&b);
	test_rmtree(dir);
}
END_TEST

Suite *
repair_suite(void)
{
	Suite *s = suite_create("repair");
	TCase *tc = tcase_create("repair");

	tcase_add_test(tc, inspect_closes_an_open_turn_with_the_exact_closers);
	tcase_add_test(tc, inspect_ignores_a_torn_last_line);
	tcase_add_test(tc, stream_gives_what_the_scan_keeps_in_bounded_pieces);
	tcase_add_test(tc, inspect_refuses_corruption);
	tcase_add_test(tc, inspect_skips_ignorable_unknown_events);
	tcase_add_test(tc, inspect_refuses_payloads_of_the_wrong_shape);
	tcase_add_test(tc, load_makes_the_repair_durable);
	tcase_add_test(tc, load_rejects_malformed_and_missing_ids);
	tcase_add_test(tc, scan_agrees_with_inspect);
	tcase_add_test(tc, scan_file_in_chunks_agrees_with_the_buffer_scan);
	tcase_add_test(tc, json_scan_says_yes_only_where_jansson_does);
	tcase_add_test(tc, json_shape_match_implies_the_validator);
	tcase_add_test(tc, streamed_inspect_refuses_what_the_full_check_refuses_after_lines_of_its_shape);
	tcase_add_test(tc, checked_shapes_take_lines_of_a_learnt_shape);
	tcase_add_test(tc, cursor_reads_only_the_types_asked_and_ends_where_the_file_lies);
	tcase_add_test(tc, streamed_inspect_split_agrees_with_the_read_in_order);
	suite_add_tcase(s, tc);
	return s;
}
