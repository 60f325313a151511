/*
 * An image prompt's blobs written off the loop (docs/contract.md §27): decoding, hashing and
 * writing 20 MiB takes more than a loop turn may. The prompt waits in its session's slot (ACP_WAIT_STORE) while
 * a worker stores the decoded images; then it runs, or parks for what it waits for, as if it came
 * then. A cancel, a close or the shutdown answers it at once (acp/gate.c) and detaches the job,
 * whose blobs are kept (they are content-addressed: nothing refers to them, nothing is wrong).
 */
#include <stdlib.h>
#include <string.h>

#include "acp/images.h"
#include "acp/internal.h"
#include "base/offload.h"
#include "base/xmalloc.h"
#include "session/log.h"

struct acp_store {
	struct acp_store *next;		/* the server's list (srv->stores) */
	struct acp_server *srv;
	struct acp_session *as;		/* NULL once detached */
	json_t *prompt;			/* owned: the checked prompt, its images' data not yet replaced */
	struct acp_image *imgs;		/* owned */
	char *line;			/* owned: the taken line some of them lie in, or NULL */
	size_t n;
	char *dir;
	int sync;
	struct err e;			/* the worker's failure */
	struct offload *off;
};

static void
acp_store_free(struct acp_store *st)
{
	struct acp_store **pp;

	for (pp = &st->srv->stores; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	json_decref(st->prompt);
	acp_images_free(st->imgs, st->n);
	free(st->line);
	free(st->dir);
	free(st);
}

static void
acp_store_work(void *arg, const atomic_int *cancel)
{
	struct acp_store *st = arg;

	acp_images_put(st->imgs, st->n, st->dir, st->sync, cancel, &st->e);
}

static void
acp_store_done(void *arg)
{
	struct acp_store *st = arg;
	struct acp_session *as = st->as;
	json_t *id, *prompt, *reply;

	if (as == NULL) {
		acp_store_free(st);	/* answered already (cancel, close, shutdown) */
		return;
	}
	as->store = NULL;
	id = acp_gate_take_prompt(as, ACP_WAIT_STORE);
	if (st->e.code != ERR_NONE) {
		acp_send(st->srv, acp_error_new(id, st->e.code, st->e.msg, NULL));
	} else {
		prompt = acp_images_refs(st->prompt, st->imgs, st->n);
		if ((reply = acp_prompt_run(as, id, prompt)) != NULL)
			acp_send(st->srv, reply);
		json_decref(prompt);
	}
	json_decref(id);
	acp_store_free(st);
}

json_t *
acp_store_start(struct acp_session *as, json_t *id, const json_t *prompt, struct acp_image *imgs, size_t n,
    char *line)
{
	struct acp_server *srv = as->srv;
	struct acp_store *st = xcalloc(1, sizeof(*st));
	json_t *none = json_array();

	st->srv = srv;
	st->as = as;
	st->prompt = json_incref((json_t *)prompt);
	st->imgs = imgs;
	st->n = n;
	st->line = line;
	st->dir = xasprintf("%s/blobs", srv->env.state_dir);
	st->sync = srv->env.sync != SESS_SYNC_NONE;
	err_clear(&st->e);
	/* the slot is free: the caller checked that nothing is in flight */
	acp_gate_park_prompt(as, ACP_WAIT_STORE, id, none);
	json_decref(none);
	as->store = st;
	st->next = srv->stores;
	srv->stores = st;
	st->off = offload_start(srv->loop, &srv->runq, acp_store_work, acp_store_done, st);
	return NULL;
}

void
acp_store_detach(struct acp_session *as)
{
	if (as->store) {
		as->store->as = NULL;
		as->store = NULL;
	}
}

void
acp_stores_free(struct acp_server *srv)
{
	struct acp_store *st;

	while ((st = srv->stores) != NULL) {
		srv->stores = st->next;		/* off the list first: acp_store_free finds it gone */
		offload_cancel(st->off);	/* joins the worker; done never runs */
		if (st->as)
			st->as->store = NULL;
		acp_store_free(st);
	}
}
