/* Routing between agents (docs/contract.md §6.6–§6.8): send_message, cold resume, interrupt, redelivery. */
#include "agent/agent_def.h"
#include "agent/subagent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/subagent_int.h"
#include "agent/view.h"
#include "base/log.h"
#include "base/offload.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "session/id.h"
#include "session/repair.h"
#include "session/store.h"

static void
sub_deliver(struct agent *sender, struct agent *target, const char *message, char *message_id)
{
	char *text = xasprintf("Agent %s sent a message: %s", agent_id(sender), message);
	json_t *view = sub_text_blocks(message);

	agent_view_pair(sender, target, view);	/* as the sender wrote it */
	json_decref(view);
	subagent_note_delivered(target);
	agent_post(target, sub_text_blocks(text), xjson_pack("{s:s, s:s}", "kind", "agent-message",
	    "senderSessionId", agent_id(sender)), message_id);
	free(text);
}

long
sub_settled_epochs(const json_t *events)
{
	long epoch = 0;
	size_t i;
	json_t *ev;

	json_array_foreach(events, i, ev) {
		if (sess_ev_of(json_string_value(json_object_get(ev, "type"))) == SESS_EV_SUBAGENT_SETTLED) {
			long ep = (long)json_integer_value(json_object_get(json_object_get(ev, "data"), "epoch"));
			if (ep > epoch)
				epoch = ep;
		}
	}
	return epoch;
}

/* The §6.6 checks before a cold resume of target, in the contract's order: 0, or -1 with e. */
static int
sub_cold_check(struct agent *sender, const char *target, struct err *e)
{
	struct agent_rt *rt = sender->rt;
	struct sess_entry *en = sess_corpus_get(rt->corpus, target);

	if (en == NULL || en->gone || en->state != SESS_ENTRY_OK)
		return err_set(e, ERR_NOT_RESUMABLE, "subagent \"%s\" is unavailable", target);
	if (en->parent == NULL || strcmp(en->parent, agent_id(sender)) != 0)
		return err_set(e, ERR_UNAUTHORIZED, "subagent \"%s\" belongs to another parent session", target);
	if (!sub_is_subagent(en) || en->mode == NULL || strcmp(en->mode, "continuable") != 0)
		return err_set(e, ERR_NOT_RESUMABLE, "subagent \"%s\" has no supported continuation state and "
		    "cannot be resumed; choose a different target", target);
	return sub_capacity(rt, target, e);
}

/* A load of target that failed with le, as §6.6 words it: -1 with e. */
static int
sub_load_error(const char *target, const struct err *le, struct err *e)
{
	if (le->code == ERR_SESSION_BUSY)
		return err_set(e, ERR_SESSION_BUSY, "subagent \"%s\" is held by another process", target);
	if (le->code == ERR_SESSION_LOG_IO)
		return err_set(e, ERR_SESSION_LOG_IO, "subagent \"%s\" cannot be opened: %s", target, le->msg);
	return err_set(e, ERR_NOT_RESUMABLE, "subagent \"%s\" is unavailable", target);
}

/* The loaded child goes live as a continuable child; its parent gets what it missed. The child,
 * or NULL with e (it is released). */
static struct agent *
sub_cold_adopted(struct agent *child, struct err *e)
{
	if (sess_failure(child->sess)) {
		/* A read-only log: the child could take the message but never record its turn, its
		 * settlement or its notice; refuse before anything is delivered. */
		err_set(e, ERR_SESSION_LOG_IO, "subagent \"%s\" cannot be written: %s", agent_id(child),
		    sess_failure(child->sess));
		agent_release(child);
		return NULL;
	}
	sub_adopt(child, SUBAGENT_CONTINUABLE);
	if (child->rt->watch)
		child->rt->watch->born(child->rt->watch->arg, child, NULL);	/* live again: observed */
	static const char *const settled[] = { "subagent/settled", NULL };
	json_t *evs = sess_collect(child->sess, settled);
	sub_state(child)->epoch = (int)sub_settled_epochs(evs) + 1;
	json_decref(evs);
	subagent_redeliver(child);
	return child;
}

/* Cold resume (§6.6): checks in the contract's order, then load, rebuild, deliver. */
static struct agent *
sub_cold_resume(struct agent *sender, const char *target, struct err *e)
{
	struct agent *child;
	struct err le;

	if (sub_cold_check(sender, target, e) < 0)
		return NULL;
	err_clear(&le);
	if ((child = agent_load(sender->rt, target, sender->tools, NULL, &le)) == NULL) {
		sub_load_error(target, &le, e);
		return NULL;
	}
	return sub_cold_adopted(child, e);
}

struct agent *
subagent_resume(struct agent *parent, const char *child_id, struct err *e)
{
	return sub_cold_resume(parent, child_id, e);
}

int
subagent_send(struct agent *sender, const char *target, const char *message, char *message_id,
    struct err *e)
{
	struct agent_rt *rt = sender->rt;
	const char *parent = agent_parent(sender);
	struct agent *t;

	if (!sess_id_valid(target))
		return err_set(e, ERR_INVALID_ARGUMENT, "invalid arguments: \"agent_id\" is not a valid agent id");
	if (parent && strcmp(target, parent) == 0) {
		if (subagent_mode(sender) != SUBAGENT_CONTINUABLE)
			return err_set(e, ERR_UNAUTHORIZED, "agent \"%s\" is not a resident continuable child and "
			    "cannot send to parent \"%s\"", agent_id(sender), target);
		t = agent_rt_get(rt, target);
		if (t == NULL)
			return err_set(e, ERR_PARENT_UNAVAILABLE, "direct parent is not live; the message was not "
			    "delivered");
		sub_deliver(sender, t, message, message_id);
		return 0;
	}
	t = agent_rt_get(rt, target);
	if (t && subagent_mode(t) == SUBAGENT_CONTINUABLE && agent_parent(t) &&
	    strcmp(agent_parent(t), agent_id(sender)) == 0) {
		sub_deliver(sender, t, message, message_id);
		return 0;
	}
	if (t && (agent_parent(t) == NULL || strcmp(agent_parent(t), agent_id(sender)) != 0))
		return err_set(e, ERR_UNAUTHORIZED, "subagent \"%s\" belongs to another parent session", target);
	t = sub_cold_resume(sender, target, e);
	if (t == NULL)
		return -1;
	sub_deliver(sender, t, message, message_id);
	return 0;
}

/*
 * A send_message whose target's log is read off the loop (docs/decisions.md, "Loading at scan speed": a big child's cold resume
 * was a stall). The worker reads and checks the file and rebuilds its conversation; the loop
 * then makes it live and delivers, and the call completes.
 */
struct subagent_sending {
	struct agent *sender;
	char target[SESS_ID_LEN + 1];
	char *message;
	struct sess_loading *ld;
	struct agent_conv conv;
	size_t nfold;
	struct offload *job;
	subagent_sent_fn *done;
	void *arg;
};

static void
sub_sending_free(struct subagent_sending *sg)
{
	if (sg->ld)
		sess_loading_free(sg->ld);
	agent_conv_free(&sg->conv);
	free(sg->message);
	free(sg);
}

/* On the worker: touches only sg's load and conversation. */
static void
sub_sending_read(void *arg, const atomic_int *cancel)
{
	struct subagent_sending *sg = arg;
	struct sess_cursor *fold;

	sess_loading_read(sg->ld, cancel);
	if (!sess_loading_ok(sg->ld) || atomic_load(cancel))
		return;
	fold = agent_conv_begin_loading(&sg->conv, sg->ld, &sg->nfold);
	agent_conv_fold_cursor(&sg->conv, fold, cancel);
	sess_cursor_free(fold);
}

/* The child goes live from what was read, and takes the message: 0 with message_id, or -1 with e
 * (on the loop; sg's load is taken either way). */
static int
sub_sending_finish(struct subagent_sending *sg, char *message_id, struct err *e)
{
	struct agent_rt *rt = sg->sender->rt;
	struct agent *child;
	struct agent_conv none;
	struct err le;
	struct sess *s;

	err_clear(&le);
	s = sess_store_load_finish(rt->store, sg->ld, &le);
	sg->ld = NULL;		/* freed by finish */
	if (s == NULL)
		return sub_load_error(sg->target, &le, e);
	if (sub_capacity(rt, sg->target, e) < 0) {
		sess_store_release(rt->store, s);	/* others took the room meanwhile */
		return -1;
	}
	agent_conv_init(&none);
	child = agent_adopt_conv(rt, s, &none, sg->sender->tools, NULL);
	agent_set_conv(child, &sg->conv, sg->nfold);	/* and what finish appended */
	if ((child = sub_cold_adopted(child, e)) == NULL)
		return -1;
	sub_deliver(sg->sender, child, sg->message, message_id);
	return 0;
}

/* Back on the loop (the call was not cancelled, so its sender is live). */
static void
sub_sending_read_done(void *arg)
{
	struct subagent_sending *sg = arg;
	char message_id[SESS_ID_LEN + 1];
	struct err e;

	sg->job = NULL;
	err_clear(&e);
	sg->done(sg->arg, sg->target, sub_sending_finish(sg, message_id, &e) == 0 ? message_id : NULL, &e);
	sub_sending_free(sg);
}

void
subagent_send_cancel(struct subagent_sending *sg)
{
	if (sg == NULL)
		return;
	if (sg->job)
		offload_cancel(sg->job);	/* joins the worker: it stops at its next chunk */
	sub_sending_free(sg);
}

int
subagent_send_begin(struct agent *sender, const char *target, const char *message, char *message_id,
    subagent_sent_fn *done, void *arg, struct subagent_sending **pending, struct err *e)
{
	struct agent_rt *rt = sender->rt;
	struct subagent_sending *sg;
	struct sess_loading *ld;
	struct err le;

	*pending = NULL;
	/* Only a cold resume waits: anything else (a live target, the parent, a bad id) is at once. */
	if (rt->resume_offload_min <= 0 || !sess_id_valid(target) || agent_rt_get(rt, target) ||
	    (agent_parent(sender) && strcmp(target, agent_parent(sender)) == 0))
		return subagent_send(sender, target, message, message_id, e);
	/* A cold resume: the checks, then the lease; a small file is read at once, on the loop. */
	if (sub_cold_check(sender, target, e) < 0)
		return -1;
	err_clear(&le);
	if ((ld = sess_store_load_start(rt->store, target, &le)) == NULL)
		return sub_load_error(target, &le, e);
	sg = xcalloc(1, sizeof(*sg));
	sg->sender = sender;
	snprintf(sg->target, sizeof(sg->target), "%s", target);
	sg->message = xstrdup(message ? message : "");
	sg->ld = ld;
	agent_conv_init(&sg->conv);
	sg->done = done;
	sg->arg = arg;
	if (sess_loading_size(ld) < rt->resume_offload_min) {
		atomic_int go = 0;
		int rc;
		sub_sending_read(sg, &go);	/* small: a few milliseconds */
		rc = sub_sending_finish(sg, message_id, e);
		sub_sending_free(sg);
		return rc;
	}
	log_debug("subagent: %s: reading %lld bytes off the loop for a message", target,
	    (long long)sess_loading_size(ld));
	sg->job = offload_start(rt->loop, rt->runq, sub_sending_read, sub_sending_read_done, sg);
	*pending = sg;
	return 1;
}

/* ---- interrupt ---- */

int
subagent_interrupt(struct agent *caller, const char *target, struct err *e)
{
	struct agent *t;

	if (strcmp(target, agent_id(caller)) == 0)
		return err_set(e, ERR_UNAUTHORIZED, "agent \"%s\" cannot interrupt itself", target);
	if (!sess_id_valid(target))
		return err_set(e, ERR_INVALID_ARGUMENT, "invalid arguments: \"agent_id\" is not a valid agent id");
	t = agent_rt_get(caller->rt, target);
	/* Resident: live and not one-shot. A root (of another tree, or the caller's own) is resident too. */
	if (t == NULL || subagent_mode(t) == SUBAGENT_ONESHOT)
		return 0;	/* not resident: an accepted no-op */
	if (!sub_is_descendant(caller->rt, target, agent_id(caller)))
		return err_set(e, ERR_UNAUTHORIZED, "subagent \"%s\" is not a live descendant of agent \"%s\"",
		    target, agent_id(caller));
	agent_cancel(t, "parent");
	return 0;
}

/* ---- redelivery ---- */

static int
sub_notice_known(struct agent *parent, const char *child, long epoch)
{
	static const char *const kinds[] = { "user/message", NULL };
	json_t *evs = sess_collect(parent->sess, kinds), *ev;
	size_t i;

	json_array_foreach(evs, i, ev) {
		json_t *st = json_object_get(json_object_get(json_object_get(ev, "data"), "source"), "settlement");
		if (st && strcmp(json_string_value(json_object_get(st, "childId")), child) == 0 &&
		    json_integer_value(json_object_get(st, "epoch")) == epoch) {
			json_decref(evs);
			return 1;
		}
	}
	json_decref(evs);
	for (const struct agent_msg *m = parent->inbox; m; m = m->next) {
		json_t *st = json_object_get(m->source, "settlement");
		if (st && strcmp(json_string_value(json_object_get(st, "childId")), child) == 0 &&
		    json_integer_value(json_object_get(st, "epoch")) == epoch)
			return 1;
	}
	return 0;
}

/*
 * Whether a stored continuable child's residency was cut off by a crash: its last turn never
 * ended, or it is isolated and its last residency never settled (the crash came while its
 * worktree was made, or committed and removed, outside a turn). Its log, as the scan kept
 * turn/start, turn/end, subagent/settled, worktree/created and subagent/descriptor, in order.
 */
static int
sub_cut_off(const json_t *marks)
{
	int open = 0, unsettled = 0, isolated = 0;
	size_t i;
	json_t *ev;

	json_array_foreach(marks, i, ev) {
		const char *type = json_string_value(json_object_get(ev, "type"));
		enum sess_ev et = sess_ev_of(type);
		if (et == SESS_EV_TURN_START)
			open = unsettled = 1;
		else if (et == SESS_EV_TURN_END)
			open = 0;
		else if (et == SESS_EV_SUBAGENT_SETTLED)
			open = unsettled = 0;
		else if (et == SESS_EV_WORKTREE_CREATED ||
		    (et == SESS_EV_SUBAGENT_DESCRIPTOR && json_is_object(json_object_get(json_object_get(ev, "data"),
			"isolation"))))
			isolated = unsettled = 1;	/* a worktree is there until a settlement removes it */
	}
	return open || (isolated && unsettled);
}

/* Loads a cut-off child (the load repairs its log: its open turn ends interrupted)
 * and settles it, so that its parent hears it was stopped, once. */
static void
sub_recover_cut_off(struct agent *parent, const char *id)
{
	struct agent *child;
	struct err e;

	err_clear(&e);
	if ((child = agent_load(parent->rt, id, parent->tools, NULL, &e)) == NULL) {
		log_warn("subagent %s: cut off by a crash, and cannot be settled now: %s", id, e.msg);
		return;
	}
	if (sess_failure(child->sess)) {
		log_warn("subagent %s: cut off by a crash, and its log cannot be written: %s", id,
		    sess_failure(child->sess));
		agent_release(child);
		return;
	}
	sub_adopt(child, SUBAGENT_CONTINUABLE);
	static const char *const settled[] = { "subagent/settled", NULL };
	json_t *evs = sess_collect(child->sess, settled);
	sub_state(child)->epoch = (int)sub_settled_epochs(evs) + 1;
	json_decref(evs);
	log_info("subagent %s: cut off by a crash; settling it for its parent %s", id, agent_id(parent));
	sub_settle_cut_off(child);
}

/* Whether a one-shot child's log (as the scan kept worktree/created and worktree/removed, in
 * order) says its worktree is still there: the crash came before its run's end removed it. */
static int
sub_worktree_left(const json_t *marks)
{
	int present = 0;
	size_t i;
	json_t *ev;

	json_array_foreach(marks, i, ev) {
		enum sess_ev et = sess_ev_of(json_string_value(json_object_get(ev, "type")));
		if (et == SESS_EV_WORKTREE_CREATED)
			present = 1;
		else if (et == SESS_EV_WORKTREE_REMOVED)
			present = 0;
	}
	return present;
}

/* A one-shot isolated child the crash cut off: nobody waits for its result any more (its
 * parent's call ended with the crash), but its worktree is there: committed and removed as at the
 * end of its run (logged), then it goes. */
static void
sub_recover_one_shot(struct agent *parent, const char *id)
{
	struct agent *child;
	struct err e;

	err_clear(&e);
	if ((child = agent_load(parent->rt, id, parent->tools, NULL, &e)) == NULL) {
		log_warn("subagent %s: cut off by a crash with its worktree, and cannot be loaded: %s", id, e.msg);
		return;
	}
	if (sess_failure(child->sess) || child->comp.wt == NULL) {
		agent_release(child);
		return;
	}
	sub_adopt(child, SUBAGENT_ONESHOT);
	log_info("subagent %s: cut off by a crash; its worktree is committed and removed", id);
	if (!sub_iso_settle(child))
		agent_release(child);
}

void
subagent_redeliver(struct agent *parent)
{
	struct agent_rt *rt = parent->rt;
	size_t n;
	struct sess_entry **kids = sess_corpus_children(rt->corpus, agent_id(parent), &n);

	/* First only the settlements (the common answer: the notice is known); the final text before
	 * one is read by a second scan only for a notice that is missing. The scan checks every line
	 * without building it (docs/contract.md §12's inspect). */
	static const char *const settled[] = { "turn/start", "turn/end", "subagent/settled", "worktree/created",
		"subagent/descriptor", NULL };
	static const char *const keep[] = { "turn/start", "assistant/message", "subagent/settled", "message/view", NULL };

	static const char *const worktree[] = { "worktree/created", "worktree/removed", NULL };

	for (size_t i = 0; i < n; i++) {
		struct sess_scan img;
		struct err e;
		char *path;
		/* an isolated one (the index knows its branch): read only those */
		if (sub_is_subagent(kids[i]) && kids[i]->state == SESS_ENTRY_OK && kids[i]->mode &&
		    strcmp(kids[i]->mode, "one-shot") == 0 && kids[i]->branch && agent_rt_get(rt, kids[i]->id) == NULL) {
			int left = 0;
			path = sess_env_path(rt->env, kids[i]->id);
			err_clear(&e);
			if (sess_scan_file(path, worktree, &img, &e) == 0 && img.kept)
				left = sub_worktree_left(img.kept);
			sess_scan_free(&img);
			free(path);
			if (left)
				sub_recover_one_shot(parent, kids[i]->id);
			continue;
		}
		if (!sub_is_subagent(kids[i]) || kids[i]->state != SESS_ENTRY_OK || kids[i]->mode == NULL ||
		    strcmp(kids[i]->mode, "continuable") != 0)
			continue;
		path = sess_env_path(rt->env, kids[i]->id);
		err_clear(&e);
		long epoch = 0;
		int cut_off = 0;
		if (sess_scan_file(path, settled, &img, &e) == 0 && img.kept) {
			epoch = sub_settled_epochs(img.kept);
			cut_off = sub_cut_off(img.kept) && agent_rt_get(rt, kids[i]->id) == NULL;
		}
		sess_scan_free(&img);
		if (cut_off)
			sub_recover_cut_off(parent, kids[i]->id);
		if (epoch > 0 && !sub_notice_known(parent, kids[i]->id, epoch) &&
		    sess_scan_file(path, keep, &img, &e) == 0 && img.kept) {
			/* The end and closing text of that residency: what precedes its settled event. */
			const char *end = "completed";
			char end_buf[32], view[AGENT_VIEW_ID_LEN] = "";
			char *work = NULL;	/* an isolated child's line about its work */
			for (size_t k = json_array_size(img.kept); k-- > 0;) {
				json_t *ev = json_array_get(img.kept, k);
				if (sess_ev_of(json_string_value(json_object_get(ev, "type"))) == SESS_EV_SUBAGENT_SETTLED &&
				    json_integer_value(json_object_get(json_object_get(ev, "data"), "epoch")) == epoch) {
					const char *e2 = json_string_value(json_object_get(json_object_get(ev, "data"), "end"));
					snprintf(end_buf, sizeof(end_buf), "%s", e2 ? e2 : "completed");
					end = end_buf;
					const char *w = json_string_value(json_object_get(json_object_get(ev, "data"), "work"));
					work = w ? xstrdup(w) : NULL;
					/* the child's view of this notice, logged right after it settled */
					json_t *next = json_array_get(img.kept, k + 1);
					const json_t *nd = json_object_get(next, "data");
					if (sess_ev_of(json_string_value(json_object_get(next, "type"))) == SESS_EV_MESSAGE_VIEW &&
					    json_is_string(json_object_get(nd, "messageId")) &&
					    json_string_value(json_object_get(nd, "recipientSessionId")) &&
					    strcmp(json_string_value(json_object_get(nd, "recipientSessionId")), agent_id(parent)) == 0)
						snprintf(view, sizeof(view), "%s", json_string_value(json_object_get(nd, "messageId")));
					json_t *cut = json_array();
					for (size_t j = 0; j < k; j++)
						json_array_append(cut, json_array_get(img.kept, j));
					json_decref(img.kept);
					img.kept = cut;
					break;
				}
			}
			char *final = agent_final_text_of(img.kept);
			char end_copy[32];
			snprintf(end_copy, sizeof(end_copy), "%s", end ? end : "completed");
			log_info("subagent %s: redelivering the notice of epoch %ld", kids[i]->id, epoch);
			sub_post_notice(parent, NULL, kids[i]->id, view[0] ? view : NULL, epoch, end_copy, final, work);
			free(work);
			free(final);
		}
		sess_scan_free(&img);
		free(path);
	}
	free(kids);
}

