/* The JSONL writer (docs/contract.md §5.3, §5.4, §15). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/event.h"
#include "session/store_def.h"	/* looks inside */
#include "session/repair.h"
#include "session/store.h"
#include "base/xmalloc.h"
#include "tests/helpers.h"

#define ID1 "00000000-0000-4000-8000-000000000001"

static char dir[64];
static struct sess_env env;
static struct sess_store store;

static void
setup_with(const char *faults, enum sess_sync sync)
{
	struct err e;
	char state[128];

	test_mkdtemp(dir, sizeof(dir));
	snprintf(state, sizeof(state), "%s/state", dir);
	err_clear(&e);
	ck_assert_int_eq(sess_env_init(&env, state, sync, 1, faults, &e), 0);
	sess_store_init(&store, &env);
}

static void
teardown(void)
{
	sess_store_free(&store);
	sess_env_free(&env);
	test_rmtree(dir);
}

static struct sess *
new_session(void)
{
	struct sess_header_info info = { .id = ID1, .created_at = 5, .cwd = "/w" };

	return sess_store_create(&store, &info);
}

/* A relative --state-dir is taken from the cwd at start: a child's worktree and header made from it
 * must not depend on where a later process runs. */
START_TEST(log_relative_state_dir_is_made_absolute)
{
	struct sess_env rel;
	struct err e;
	char *old = getcwd(NULL, 0), *want, tmp[64];

	test_mkdtemp(tmp, sizeof(tmp));
	ck_assert_int_eq(chdir(tmp), 0);
	err_clear(&e);
	ck_assert_int_eq(sess_env_init(&rel, "rel/state", SESS_SYNC_NONE, 1, NULL, &e), 0);
	ck_assert_int_eq(chdir(old), 0);
	want = xasprintf("%s/rel/state", tmp);
	ck_assert_str_eq(rel.state_dir, want);
	free(want);
	want = xasprintf("%s/rel/state/sessions", tmp);
	ck_assert_str_eq(rel.dir, want);
	free(want);
	sess_env_free(&rel);
	free(old);
	test_rmtree(tmp);
}
END_TEST

START_TEST(log_nothing_on_disk_until_first_append)
{
	struct sess *s;
	struct stat st;
	struct err e;
	char *path;

	setup_with(NULL, SESS_SYNC_TURN);
	s = new_session();
	path = sess_env_path(&env, ID1);
	ck_assert_int_ne(stat(path, &st), 0);
	err_clear(&e);
	ck_assert_ptr_nonnull(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 1), &e));
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(stat(env.dir, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	size_t len;
	char *text = test_read_file(path, &len);
	ck_assert_ptr_nonnull(strstr(text, "{\"type\":\"session\",\"version\":1,\"id\":\"" ID1 "\""));
	ck_assert_ptr_nonnull(strstr(text, "\n{\"seq\":0,\"time\":"));
	ck_assert_int_eq(text[len - 1], '\n');
	free(text);
	free(path);
	teardown();
}
END_TEST

/* An event whose string is not UTF-8 cannot be written as JSON: refused, nothing on disk. */
START_TEST(log_unencodable_event_is_refused_and_nothing_is_written)
{
	struct sess *s;
	struct stat st;
	struct err e;
	char *path;

	setup_with(NULL, SESS_SYNC_TURN);
	s = new_session();
	path = sess_env_path(&env, ID1);
	err_clear(&e);
	ck_assert_ptr_null(sess_append(s, "user/message", json_pack("{s:o}", "text", json_stringn_nocheck("\xff", 1)), &e));
	ck_assert_int_eq(e.code, ERR_INTERNAL);
	ck_assert_str_eq(e.msg, "event user/message cannot be encoded");
	ck_assert_uint_eq(s->nev, 0);
	ck_assert_int_ne(stat(path, &st), 0);	/* not even published */
	/* The session is not failed by it: the next event goes out as seq 0. */
	err_clear(&e);
	const json_t *ev = sess_append(s, "turn/start", json_pack("{s:i}", "turn", 1), &e);
	ck_assert_ptr_nonnull(ev);
	ck_assert_int_eq(json_integer_value(json_object_get(ev, "seq")), 0);
	size_t len;
	char *text = test_read_file(path, &len);
	ck_assert_ptr_null(strstr(text, "user/message"));
	free(text);
	free(path);
	teardown();
}
END_TEST

START_TEST(log_second_writer_gets_session_busy)
{
	struct sess *s;
	struct err e;

	setup_with(NULL, SESS_SYNC_NONE);
	s = new_session();
	err_clear(&e);
	ck_assert_ptr_nonnull(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 1), &e));
	/* A second open file description cannot take the lease while the first holds it. */
	err_clear(&e);
	ck_assert_ptr_null(sess_log_open(&env, ID1, &e));
	ck_assert_int_eq(e.code, ERR_SESSION_BUSY);
	teardown();
}
END_TEST

START_TEST(log_short_write_truncates_back_and_fails_the_session)
{
	struct sess *s;
	struct err e;
	char *path;
	size_t before, after;
	struct sess_image img;

	setup_with("log-short-write", SESS_SYNC_NONE);
	env.faults.short_write = 0;	/* let publication through, arm for the next append */
	s = new_session();
	err_clear(&e);
	ck_assert_ptr_nonnull(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 1), &e));
	path = sess_env_path(&env, ID1);
	free(test_read_file(path, &before));
	env.faults.short_write = 1;
	err_clear(&e);
	ck_assert_ptr_null(sess_append(s, "step/start", json_pack("{s:i, s:i}", "turn", 1, "step", 1), &e));
	ck_assert_int_eq(e.code, ERR_SESSION_LOG_IO);
	ck_assert(sess_failed(s));
	free(test_read_file(path, &after));
	ck_assert_uint_eq(after, before);	/* no half line left behind */
	err_clear(&e);
	ck_assert_ptr_null(sess_append(s, "step/end", json_pack("{s:i, s:i}", "turn", 1, "step", 1), &e));
	ck_assert_uint_eq(s->nev, 1);
	err_clear(&e);
	ck_assert_int_eq(sess_inspect_file(path, &img, &e), 0);
	ck_assert_int_eq(img.torn, 0);
	sess_image_free(&img);
	free(path);
	teardown();
}
END_TEST

START_TEST(log_short_write_on_publication_leaves_nothing)
{
	struct sess *s;
	struct err e;
	struct stat st;
	char *path;

	setup_with("log-short-write", SESS_SYNC_TURN);
	s = new_session();
	err_clear(&e);
	ck_assert_ptr_null(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 1), &e));
	ck_assert_int_eq(e.code, ERR_SESSION_LOG_IO);
	path = sess_env_path(&env, ID1);
	ck_assert_int_ne(stat(path, &st), 0);
	/* Nothing was linked: the next turn recovers and publishes (a child's first events). */
	err_clear(&e);
	ck_assert_int_eq(sess_recover(s, &e), 0);
	ck_assert_ptr_nonnull(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 1), &e));
	ck_assert_int_eq(stat(path, &st), 0);
	free(path);
	teardown();
}
END_TEST

START_TEST(log_sync_fail_marks_failed)
{
	struct sess *s;
	struct err e;

	setup_with("log-sync-fail", SESS_SYNC_TURN);
	s = new_session();
	err_clear(&e);
	ck_assert_ptr_nonnull(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 1), &e));
	sess_checkpoint(s);
	test_log_capture_start();
	ck_assert_int_eq(sess_store_sync_due(&store), 1);
	char *said = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(said, "cannot sync session " ID1 ": Input/output error"));
	free(said);
	ck_assert(sess_failed(s));
	/* The fault fires once: a later sync of another session works. */
	ck_assert(!env.faults.sync_fail);
	teardown();
}
END_TEST

START_TEST(log_always_syncs_every_append_and_turn_only_at_checkpoints)
{
	struct sess *s;
	struct err e;

	setup_with(NULL, SESS_SYNC_ALWAYS);
	s = new_session();
	err_clear(&e);
	ck_assert_ptr_nonnull(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 1), &e));
	ck_assert_int_eq(s->log->dirty, 0);
	teardown();
	setup_with(NULL, SESS_SYNC_TURN);
	s = new_session();
	ck_assert_ptr_nonnull(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 1), &e));
	ck_assert_ptr_nonnull(sess_append(s, "turn/end", json_pack("{s:i}", "turn", 1), &e));
	ck_assert_int_eq(s->log->dirty, 1);
	ck_assert_int_eq(sess_store_sync_due(&store), 0);
	ck_assert_int_eq(s->log->dirty, 1);	/* no checkpoint asked: not synced yet */
	sess_checkpoint(s);
	ck_assert_int_eq(sess_store_sync_due(&store), 0);
	ck_assert_int_eq(s->log->dirty, 0);
	teardown();
}
END_TEST

START_TEST(faults_parse_names_and_rejects_unknown)
{
	struct sess_faults f;
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(sess_faults_parse(&f, "log-sync-fail,exit-after-event:turn/end:2", &e), 0);
	ck_assert(f.sync_fail);
	ck_assert_str_eq(f.exit_type, "turn/end");
	ck_assert_int_eq(f.exit_n, 2);
	err_clear(&e);
	ck_assert_int_eq(sess_faults_parse(&f, "disk-on-fire", &e), -1);
	err_clear(&e);
	ck_assert_int_eq(sess_faults_parse(&f, "exit-after-event:turn/end:x", &e), -1);
}
END_TEST

static void
count_observer(void *arg, struct sess *s, const json_t *ev)
{
	(void)s;
	(void)ev;
	(*(int *)arg)++;
}

/* After a write cut back to the last good line (a full disk), the failure names its cause and
 * the session writes again once recovered, with the open tail closed as a reload would close it;
 * a failed sync stays failed (what reached the disk is unknown). */
START_TEST(log_recovers_after_a_cut_back_write_but_not_after_a_failed_sync)
{
	struct sess *s;
	struct err e;
	struct sess_image img;
	char *path;

	setup_with("log-short-write", SESS_SYNC_NONE);
	env.faults.short_write = 0;
	s = new_session();
	path = sess_env_path(&env, ID1);
	err_clear(&e);
	ck_assert_ptr_nonnull(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 1), &e));
	env.faults.short_write = 1;
	ck_assert_ptr_null(sess_append(s, "user/message", json_pack("{s:s, s:[], s:{s:s}}", "id", "m",
	    "content", "source", "kind", "user"), &e));
	ck_assert_int_eq(e.code, ERR_SESSION_LOG_IO);
	ck_assert_ptr_nonnull(strstr(e.msg, "Input/output error"));
	ck_assert_ptr_nonnull(strstr(sess_failure(s), "Input/output error"));
	err_clear(&e);
	ck_assert_ptr_null(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 2), &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "Input/output error"));	/* still the cause, not a generic line */
	int told = 0;
	sess_observe(s, count_observer, &told);
	err_clear(&e);
	ck_assert_int_eq(sess_recover(s, &e), 0);
	ck_assert_ptr_null(sess_failure(s));
	ck_assert_int_eq(told, 1);	/* the closer reaches the observers (the client's tool card, the index) */
	/* The open turn got its closer; the next turn is written after it. */
	ck_assert_uint_eq(s->nev, 2);
	json_t *ev1 = sess_event_get(s, 1);
	ck_assert_str_eq(json_string_value(json_object_get(ev1, "type")), "turn/end");
	json_decref(ev1);
	ck_assert_ptr_nonnull(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 2), &e));
	err_clear(&e);
	ck_assert_int_eq(sess_inspect_file(path, &img, &e), 0);
	ck_assert_uint_eq(json_array_size(img.events), 4);	/* turn 1, its closer, turn 2 (+ its closer) */
	ck_assert(!img.torn);
	sess_image_free(&img);
	/* A file changed under us is not written on. */
	test_write_file(path, "{}\n", 3);
	env.faults.short_write = 1;
	ck_assert_ptr_null(sess_append(s, "turn/end", json_pack("{s:i, s:{s:s}}", "turn", 2, "reason", "kind",
	    "completed"), &e));
	err_clear(&e);
	ck_assert_int_eq(sess_recover(s, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "no longer ends on the last good line"));
	free(path);
	teardown();

	setup_with("log-sync-fail", SESS_SYNC_TURN);
	s = new_session();
	err_clear(&e);
	ck_assert_ptr_nonnull(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 1), &e));
	ck_assert_ptr_nonnull(sess_append(s, "turn/end", json_pack("{s:i, s:{s:s}}", "turn", 1, "reason", "kind",
	    "completed"), &e));
	ck_assert_int_eq(sess_log_sync(s->log, &e), -1);
	err_clear(&e);
	ck_assert_int_eq(sess_recover(s, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "cannot sync"));
	teardown();
}
END_TEST

/* A file that cannot be opened for writing loads read-only: its events are there, every append is
 * refused naming the file, nothing on disk changes. Root ignores file modes: there the test makes
 * the point with the open flags alone (the shell test tests/readonly.sh uses a read-only mount). */
START_TEST(log_unwritable_file_loads_read_only)
{
	struct sess *s;
	struct err e;
	char *path;
	size_t before, after;

	setup_with(NULL, SESS_SYNC_NONE);
	s = new_session();
	err_clear(&e);
	ck_assert_ptr_nonnull(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 1), &e));
	sess_store_release(&store, s);
	path = sess_env_path(&env, ID1);
	free(test_read_file(path, &before));
	ck_assert_int_eq(chmod(path, 0400), 0);
	if (geteuid() != 0) {
		s = sess_store_load(&store, ID1, &e);
		ck_assert_ptr_nonnull(s);
		ck_assert(s->log->readonly);
		/* the open turn is closed in memory only */
		ck_assert_uint_eq(s->nev, 2);
		ck_assert_ptr_null(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 2), &e));
		ck_assert_int_eq(e.code, ERR_SESSION_LOG_IO);
		ck_assert_ptr_nonnull(strstr(e.msg, "read-only"));
		ck_assert_ptr_nonnull(strstr(e.msg, path));
		err_clear(&e);
		ck_assert_int_eq(sess_recover(s, &e), -1);
		free(test_read_file(path, &after));
		ck_assert_uint_eq(before, after);
	}
	free(path);
	teardown();
}
END_TEST


/* Every observer is told, however many there are (a fifth was dropped silently once). */
START_TEST(store_tells_every_observer)
{
	int seen[9] = { 0 };
	struct sess *s;
	struct err e;

	setup_with(NULL, SESS_SYNC_NONE);
	s = new_session();
	for (int i = 0; i < 9; i++)
		sess_observe(s, count_observer, &seen[i]);
	sess_unobserve(s, count_observer, &seen[4]);
	err_clear(&e);
	ck_assert_ptr_nonnull(sess_append(s, "turn/start", json_pack("{s:i}", "turn", 1), &e));
	for (int i = 0; i < 9; i++)
		ck_assert_int_eq(seen[i], i == 4 ? 0 : 1);
	teardown();
}
END_TEST

/* The event-type table (session/evtype.h) and the payload table agree: every type has its name,
 * its code, a payload check, and the inline compare; nothing else is a type. */
START_TEST(log_event_types_are_one_table)
{
	struct err e;

	for (int i = SESS_EV_NONE + 1; i < SESS_EV_COUNT; i++) {
		const char *name = sess_ev_name((enum sess_ev)i);
		ck_assert_int_eq(sess_ev_of(name), i);
		ck_assert_int_eq(sess_event_type_code(name), i);
		ck_assert(sess_event_type_known(name));
		/* every known type has a payload shape: an empty payload is judged, not waved through */
		json_t *ev = sess_event_new(0, 1, name, json_object());
		err_clear(&e);
		int rc = sess_event_check(ev, 0, &e);
		ck_assert_msg(rc == 1 || rc == -1, "%s: %d", name, rc);
		json_decref(ev);
	}
	ck_assert(sess_ev_is_TURN_START("turn/start", 10));
	ck_assert(!sess_ev_is_TURN_START("turn/star", 9));
	ck_assert_int_eq(sess_ev_of("turn/starts"), SESS_EV_NONE);
	ck_assert_int_eq(sess_ev_of(NULL), SESS_EV_NONE);
	ck_assert_str_eq(sess_ev_name(SESS_EV_NONE), "");
	ck_assert_int_eq(sess_event_type_code("no/such"), 0);
}
END_TEST

Suite *
log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("log");

	tcase_add_test(tc, log_nothing_on_disk_until_first_append);
	tcase_add_test(tc, log_relative_state_dir_is_made_absolute);
	tcase_add_test(tc, log_event_types_are_one_table);
	tcase_add_test(tc, log_unencodable_event_is_refused_and_nothing_is_written);
	tcase_add_test(tc, log_second_writer_gets_session_busy);
	tcase_add_test(tc, log_short_write_truncates_back_and_fails_the_session);
	tcase_add_test(tc, log_short_write_on_publication_leaves_nothing);
	tcase_add_test(tc, log_sync_fail_marks_failed);
	tcase_add_test(tc, log_always_syncs_every_append_and_turn_only_at_checkpoints);
	tcase_add_test(tc, faults_parse_names_and_rejects_unknown);
	tcase_add_test(tc, log_recovers_after_a_cut_back_write_but_not_after_a_failed_sync);
	tcase_add_test(tc, log_unwritable_file_loads_read_only);
	tcase_add_test(tc, store_tells_every_observer);
	suite_add_tcase(s, tc);
	return s;
}
