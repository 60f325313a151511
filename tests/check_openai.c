/* The openai provider without a server: refused connections fail clearly, never leak the key. */
#include <string.h>


#include "agent/model.h"
#include "tests/helpers.h"

static char code[64], msg[700];
static int finished;

static void
s_text(void *arg, const char *s, size_t n)
{
	(void)arg;
	(void)s;
	(void)n;
}

static void
s_call(void *arg, const char *id, const char *name, const char *args)
{
	(void)arg;
	(void)id;
	(void)name;
	(void)args;
}

static void
s_finish(void *arg, const char *f, const json_t *u)
{
	(void)arg;
	(void)f;
	(void)u;
	finished = 1;
}

static void
s_error(void *arg, const char *c, const char *m)
{
	struct ev_loop *loop = arg;

	snprintf(code, sizeof(code), "%s", c);
	snprintf(msg, sizeof(msg), "%s", m);
	ev_break(loop, EVBREAK_ALL);
}

static void
drain(struct ev_loop *loop, ev_prepare *w, int revents)
{
	(void)loop;
	(void)revents;
	runq_drain(w->data);
}

START_TEST(openai_refused_connection_is_a_clear_error)
{
	struct ev_loop *loop = ev_loop_new(0);
	struct runq q;
	ev_prepare prep;
	struct err e;
	struct openai_config cfg = { "http://127.0.0.1:1", "sk-secret-key", "m", 2000, 5000, 3, 5 };
	json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", "hi");
	struct model_call call = { .agent_id = "a", .script = "root", .system = "s", .messages = msgs };
	struct model_sink sink = { s_text, s_text, s_call, s_finish, s_error, loop };

	runq_init(&q, NULL);
	ev_prepare_init(&prep, drain);
	prep.data = &q;
	ev_prepare_start(loop, &prep);
	err_clear(&e);
	struct model *m = model_openai_new(&q, loop, &cfg, &e);
	ck_assert_ptr_nonnull(m);
	m->ops->start(m, &call, &sink);
	ev_run(loop, 0);
	ck_assert_str_eq(code, "MODEL_CONNECTION");
	ck_assert_ptr_nonnull(strstr(msg, "cannot reach the model server at http://127.0.0.1:1/chat/completions"));
	ck_assert_ptr_null(strstr(msg, "sk-secret-key"));
	ck_assert_int_eq(finished, 0);
	model_free(m);
	json_decref(msgs);
	ev_prepare_stop(loop, &prep);
	ev_loop_destroy(loop);
}
END_TEST

START_TEST(openai_needs_a_key_and_an_http_url)
{
	struct runq q;
	struct err e;
	struct openai_config nokey = { "http://x", NULL, "m", 1, 1, 3, 1 };
	struct openai_config badurl = { "ftp://x", "k", "m", 1, 1, 3, 1 };

	runq_init(&q, NULL);
	err_clear(&e);
	ck_assert_ptr_null(model_openai_new(&q, NULL, &nokey, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "ACP_AGENT_API_KEY"));
	err_clear(&e);
	ck_assert_ptr_null(model_openai_new(&q, NULL, &badurl, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "ACP_AGENT_BASE_URL"));
}
END_TEST

Suite *
openai_suite(void)
{
	Suite *s = suite_create("openai");
	TCase *tc = tcase_create("openai");

	tcase_add_test(tc, openai_refused_connection_is_a_clear_error);
	tcase_add_test(tc, openai_needs_a_key_and_an_http_url);
	tcase_set_timeout(tc, 20);
	suite_add_tcase(s, tc);
	return s;
}
