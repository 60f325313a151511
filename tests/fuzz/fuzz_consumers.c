/*
 * The readers of a loaded log (docs/contract.md §11: a log that parses but lies never crashes the process):
 * whatever inspect accepts goes through every consumer of stored events: the load for writing
 * (closers made durable) and the agent built on it, session/load's replay mapping for both tool
 * sets, the conversation sent to a model, the final text and the system prompt, the Team fold,
 * and the corpus index with its listing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "acp/updates.h"
#include "agent/agent.h"
#include "agent/agent_def.h"	/* looks inside */
#include "agent/team.h"
#include "base/runq.h"
#include "base/xjson.h"
#include "session/corpus.h"
#include "session/repair.h"
#include "session/store.h"
#include "tools/toolsets.h"

/* One answer for the prompt after the load (replay takes it whatever the agent's position). */
#define FUZZ_RECORDING "{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"text\":\"ok\"}]}]}"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static struct toolbox sets[2];
static char state[64];

static void
fuzz_setup(void)
{
	for (int i = 0; i < 2; i++) {
		toolbox_init(&sets[i]);
		toolsets_build(&sets[i], toolsets_profile(i ? "team" : "default", 0));
	}
	snprintf(state, sizeof(state), "/tmp/fuzz-consumers-%ld", (long)getpid());
}

/* The consumers of a parsed event list. */
static void
fuzz_events(const json_t *events)
{
	for (int s = 0; s < 2; s++)
		json_decref(acp_update_replay(events, &sets[s]));
	struct agent_conv inc, whole;
	agent_conv_init(&inc);
	agent_conv_init(&whole);
	for (size_t i = 0; i < json_array_size(events); i++)
		agent_conv_fold(&inc, json_array_get(events, i));
	agent_conv_rebuild(&whole, events);
	/* The incremental fold and the rebuild from the latest compaction agree on any valid log. */
	if (!json_equal(inc.msgs, whole.msgs) || inc.bytes != whole.bytes || inc.usage != whole.usage ||
	    inc.bytes_since != whole.bytes_since || inc.attempts != whole.attempts)
		abort();
	agent_conv_free(&inc);
	agent_conv_free(&whole);
	struct team *t = team_new();
	team_fold(t, events);
	team_free(t);
}

/* The same bytes as the file of id (the header's): the index, the listing, a load and its agent. */
static void
fuzz_file(const char *id, const unsigned char *data, size_t size)
{
	struct sess_env env;
	struct sess_store store;
	struct sess_corpus corpus;
	struct runq q;
	struct agent_rt rt;
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct err e;
	char path[128];
	size_t n;

	err_clear(&e);
	if (sess_env_init(&env, state, SESS_SYNC_NONE, 1, NULL, &e) < 0)
		__builtin_trap();
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, id);
	FILE *f = fopen(path, "w");
	if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		__builtin_trap();
	sess_store_init(&store, &env);
	sess_corpus_init(&corpus, &env);
	if (sess_corpus_scan(&corpus, &e) == 0) {
		free(sess_corpus_list(&corpus, &n));
		free(sess_corpus_children(&corpus, id, &n));
	}
	runq_init(&q, loop);
	struct model *model = model_replay_new_buf(&q, FUZZ_RECORDING, sizeof(FUZZ_RECORDING) - 1, &e);
	agent_rt_init(&rt, &q, &env, &store, &corpus, model);
	err_clear(&e);
	struct agent *a = agent_load(&rt, id, &sets[0], NULL, &e);
	if (a) {
		free(agent_final_text(a));
		free(agent_system_prompt(a));
		json_t *all = sess_read_all(a->sess);
		fuzz_events(all);
		json_decref(all);
		/* And the next prompt after it: a turn on top of the loaded state (its number, the
		 * conversation sent to the model, the answer). */
		agent_post(a, xjson_pack("[{s:s, s:s}]", "type", "text", "text", "go on"),
		    xjson_pack("{s:s}", "kind", "user"), NULL);
		runq_drain(&q);
	}
	agent_rt_shutdown(&rt);
	runq_drain(&q);
	agent_rt_free(&rt);
	runq_stop(&q);
	model_free(model);
	sess_corpus_free(&corpus);
	sess_store_free(&store);
	unlink(path);
	sess_env_free(&env);
	ev_loop_destroy(loop);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static int ready;
	struct sess_image img;
	struct err e;

	if (!ready) {
		fuzz_setup();
		ready = 1;
	}
	err_clear(&e);
	if (sess_inspect_buf((const char *)data, size, &img, &e) == 0) {
		fuzz_events(img.events);
		fuzz_file(json_string_value(json_object_get(img.header, "id")), data, size);
	}
	sess_image_free(&img);
	return 0;
}
