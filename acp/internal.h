/*
 * What the files of the ACP server share (not an API: acp/ only; acp/README.md says which file
 * does what). dispatch.c: a line to its method; gate.c: the ordering gate (what waits, and
 * why); server.c: the wait_idle waiters and the loop plumbing; send.c: what leaves; session.c: the session methods (new, load, resume, list, close); replay.c: a load's
 * sliced replay;
 * load.c: a stored session read off the loop; options.c: modes and config options; asks.c:
 * permission asks; prompt.c: the prompt flow (the agent's hooks, held replies, prompt, cancel).
 */
#ifndef ACP_INTERNAL_H
#define ACP_INTERNAL_H

#include <jansson.h>

#include "acp/rpc.h"
#include "acp/server.h"
#include "acp/updates.h"
#include "base/err.h"

/* ---- send.c: what leaves for the client ---- */

/* Queues one message for stdout; steals msg. */
void acp_send(struct acp_server *srv, json_t *msg);
/* A session/update notification; steals update. */
json_t *acp_update_msg(const char *sid, json_t *update);
/* The bytes of acp_update_msg's message up to its update (check_outbound pins the two equal);
 * the replay sends each update inside them, without building the envelope. */
void acp_update_prefix(struct buf *b, const char *sid);
/* The live update of an appended event of a's session (a: the agent, or NULL), on sid. */
void acp_send_event_update(struct acp_server *srv, const char *sid, struct agent *a, const json_t *ev);
/* A session/update whose update is the bytes s[0..n) (jenc's), held like acp_send_update's. */
void acp_send_update_raw(struct acp_server *srv, const char *sid, const char *s, size_t n);
/* The same inside prefix (the replay's, made once for its session), never held. */
void acp_send_update_bytes(struct acp_server *srv, const struct buf *prefix, const char *sid, const char *s, size_t n);
/* A message about a session that is being replayed waits until the replay is out (steals msg). */
void acp_hold(struct acp_session *as, json_t *msg);
/* The client's session of sid: its own, or for a live agent below a root, the root's; or NULL. */
struct acp_session *acp_root_session(struct acp_server *srv, const char *sid);
/* What the root's start met (a cut instructions file, skipped agent type files), as notices to a
 * client with session.notices, once per session (docs/contract.md §27). */
void acp_session_notices(struct acp_server *srv, struct acp_session *as);
/* The session whose replay in flight holds what is sent about session sid (its own, or a child's
 * root's), or NULL. */
struct acp_session *acp_held_by(struct acp_server *srv, const char *sid);
/* Takes the request id still held by a replay out of it: 1, or 0 when none is held. */
int acp_hold_withdraw(struct acp_server *srv, const json_t *id);
/* Sends (or holds, during its replay) an update of session sid; steals update. */
void acp_send_update(struct acp_server *srv, const char *sid, json_t *update);
/* The -32602 and -32002 replies, and an error of the session layer as a JSON-RPC error: new refs. */
json_t *acp_invalid_params(const json_t *id, const char *details);
json_t *acp_unknown_session(const json_t *id, const char *sid);
json_t *acp_session_error(const json_t *id, const char *sid, const struct err *e);

/* ---- server.c: the loop's plumbing, and the methods of the process ---- */

/* The write queue drained below its low mark: stdin and paused replays go on. */
void acp_on_low(void *arg);
json_t *acp_m_initialize(struct acp_server *srv, struct acp_msg *m);
json_t *acp_m_authenticate(struct acp_server *srv, struct acp_msg *m);
json_t *acp_m_wait_idle(struct acp_server *srv, struct acp_msg *m);

/* ---- dispatch.c: a line to its method ---- */

/* A line read (and recorded) or released by the gate: through the gate, then to its method. */
void acp_dispatch(struct acp_server *srv, const char *line, size_t len);
/* The same past the corpus lane (the gate releases that lane's lines here). */
void acp_dispatch_now(struct acp_server *srv, const char *line, size_t len);

/* ---- gate.c: the ordering gate ---- */

void acp_gate_init(struct acp_server *srv);
void acp_gate_free(struct acp_server *srv);
/* Parks the line in the corpus lane when it must wait for the index (or something waits
 * already): 1 then, else 0. */
int acp_gate_admit(struct acp_server *srv, const char *line, size_t len);
/* The corpus index is complete (its on_ready): the corpus lane is released. */
void acp_gate_corpus_ready(void *arg);
/* Whether no line waits in the corpus lane. */
int acp_gate_empty(const struct acp_server *srv);
void acp_lane_init(struct acp_lane *q);
int acp_lane_empty(const struct acp_lane *q);
/* Parks a copy of line (prompt: a session/prompt request) with the reason it waits. */
void acp_lane_push(struct acp_lane *q, enum acp_wait why, const char *line, size_t len, int prompt);
/* Its reason is gone: the lines are dispatched in order, up to the first prompt when upto_prompt
 * (that one and the rest stay). */
void acp_lane_release(struct acp_server *srv, struct acp_lane *q, int upto_prompt);
/* The process ends: each parked prompt is answered cancelled, the rest dropped. */
void acp_lane_answer_prompts(struct acp_server *srv, struct acp_lane *q);
void acp_lane_free(struct acp_lane *q);
/* Parks a checked prompt (id, prompt: borrowed) in as's slot: 0, or -1 when the slot is taken. */
int acp_gate_park_prompt(struct acp_session *as, enum acp_wait why, const json_t *id, const json_t *prompt);
/* A replay of as is out: the parked prompt runs when nothing holds it any more (no replay, no
 * prompt in flight). */
void acp_gate_release_prompt(struct acp_session *as);
/* The cancelled turn's answer left: a prompt parked behind it starts. */
void acp_gate_after_cancelled(struct acp_session *as);
/* Sends reply (stolen) after the next sync, in order with the turns' answers queued before it. */
void acp_prompt_answer_after_sync(struct acp_session *as, json_t *reply);
/* Answers the parked prompt cancelled when it waits for why (ACP_WAIT_NONE: whatever it waits for). */
void acp_gate_drop_prompt(struct acp_session *as, enum acp_wait why);
void acp_gate_free_prompt(struct acp_session *as);
/* Takes the prompt parked for why off its slot: its id (new ref), or NULL when none waits for why. */
json_t *acp_gate_take_prompt(struct acp_session *as, enum acp_wait why);

/* acp/imgstore.c: an image prompt waits (parked, ACP_WAIT_STORE) while its images are decoded
 * (those left to decode) and stored off the loop, then runs as acp_prompt_run does. id: borrowed;
 * imgs and line (the taken line they lie in, or NULL): stolen. Returns NULL. */
struct acp_image;
json_t *acp_store_start(struct acp_session *as, json_t *id, const json_t *prompt, struct acp_image *imgs, size_t n,
    char *line);
/* The parked prompt was answered: the job, when it ends, only frees itself. */
void acp_store_detach(struct acp_session *as);
void acp_stores_free(struct acp_server *srv);
/* The buffer that holds m's line, when m came from stdin and is being dispatched now: the
 * caller's (free()), the line's bytes stay where they are in it. NULL otherwise. */
char *acp_take_line(struct acp_server *srv, const struct acp_msg *m);
/* A checked prompt (images stored) runs now, parks, or is refused (its reply). */
json_t *acp_prompt_run(struct acp_session *as, json_t *id, const json_t *prompt);

/* ---- session.c: the session methods ---- */

/* A string whose C text would stop short at a \u0000 (an id, a path, a command): refused, never cut. */
int acp_has_nul(const json_t *s);
/* The live ACP session for sid, or NULL with *reply (-32002). */
struct acp_session *acp_live_session(struct acp_server *srv, struct acp_msg *m, json_t **reply);
void acp_session_free(struct acp_session *as);
/* Cancels the session's current turn (session/cancel, close). */
void acp_session_cancel(struct acp_session *as);

/* ---- replay.c: the session/load replay ---- */

/* Stops the replays of as (session/close: each load is answered), or of every session (shutdown). */
void acp_replays_stop(struct acp_server *srv, struct acp_session *as);
/* The client read most of what was queued: paused replays go on. */
void acp_replays_resume(struct acp_server *srv);
/* The server goes: every replay is freed. */
void acp_replays_free(struct acp_server *srv);
/* A stored session read under its lease goes live for the request id (borrowed) with its params
 * (borrowed); frees ld. The ACP session, or NULL with *reply. conv: its conversation, moved in
 * (NULL: rebuilt here). The caller then calls agent_rt_recover once the conversation is whole:
 * children that settled while it was not live deliver their notices, the Team's roster, tasks
 * and mail come back (docs/contract.md §6.6), and any of them may start a turn. */
struct acp_session *acp_open_loaded(struct acp_server *srv, struct sess_loading *ld, struct agent_conv *conv,
    const char *sid,
    const json_t *id, const json_t *params, json_t **reply);
/* The replay that answers session/load id (borrowed); the answer of session/resume id (borrowed). */
void acp_replay_start(struct acp_server *srv, struct acp_session *as, json_t *id);
/* child went live (made, or resumed) while its root's replay may be out: its replayed history
 * stops where its file is now. */
void acp_replays_child_live(struct acp_server *srv, struct agent *child);
void acp_resume_answer(struct acp_server *srv, struct acp_session *as, json_t *id);
json_t *acp_m_session_new(struct acp_server *srv, struct acp_msg *m);
json_t *acp_m_session_load(struct acp_server *srv, struct acp_msg *m);
json_t *acp_m_session_resume(struct acp_server *srv, struct acp_msg *m);
json_t *acp_m_session_list(struct acp_server *srv, struct acp_msg *m);
json_t *acp_m_session_close(struct acp_server *srv, struct acp_msg *m);
json_t *acp_m_session_delete(struct acp_server *srv, struct acp_msg *m);

/* ---- load.c: loads of big stored sessions, read off the loop ---- */

/* Below this a stored session is read on the loop (a few milliseconds); --deterministic reads every
 * one there, so a scenario's output does not depend on a thread's timing. */
#define ACP_LOAD_OFFLOAD_MIN ((off_t)512 * 1024)
/* The pipe buffer asked for on stdout: a replay streams megabytes, and the default 64 KiB wakes
 * the client and us every 64 KiB (1 MiB is what Linux lets any user have). */
#define ACP_PIPE_ROOM (1 << 20)
/* How far step 2 of a load (the conversation's rebuild) gives way to the loop thread: nice 10
 * weighs about a tenth of the loop's when both want a core. */
#define ACP_FOLD_NICE 19

/* Reads ld on a worker for the request m (load when replay, else resume); the answer comes when
 * the session is live. Takes ld. The conversation is rebuilt on the worker after that, while the
 * replay runs: until it is in, a prompt about the session (and whatever follows it, a close too)
 * waits in the load's queue. */
void acp_load_offload(struct acp_server *srv, struct sess_loading *ld, const char *sid, struct acp_msg *m,
    int replay);
/* The load of sid in flight, or NULL. */
struct acp_load *acp_load_find(struct acp_server *srv, const char *sid);
/* A line naming l's session (m): 0 when it goes through now; else 1: it waits in l's queue (it
 * is copied), or it is a session/close while the file is read, which cancels the load (answered
 * -32002) and is answered here. */
int acp_load_hold(struct acp_load *l, struct acp_msg *m, const char *line, size_t len);
/* Shutdown: every load stops, unanswered. */
void acp_loads_stop(struct acp_server *srv);

/* ---- options.c: modes and config options (docs/contract.md §17.2) ---- */

json_t *acp_session_modes(struct agent *root);				/* new ref */
json_t *acp_session_config(struct acp_server *srv, struct agent *root);	/* new ref */
/* Adds modes and configOptions to a new/load/resume result. */
void acp_session_describe(struct acp_server *srv, struct agent *root, json_t *result);
/* /mode [id]: the text to show; sets the mode and sends both updates when id is given. */
char *acp_mode_command(struct acp_session *as, const char *arg);
json_t *acp_m_session_set_mode(struct acp_server *srv, struct acp_msg *m);
json_t *acp_m_session_set_config_option(struct acp_server *srv, struct acp_msg *m);

/* ---- asks.c: permission asks on the root's session (agent_client's ask and call_status) ---- */

long acp_ask(void *self, struct tool_inv *inv, json_t *options, agent_client_done *done, void *arg,
    struct err *e);
void acp_ask_call_status(void *self, struct tool_inv *inv, const char *status);
/* agent_client.notice: a notice, or a line for a client without session.notices (docs/decisions.md). */
void acp_client_notice(void *self, const char *sid, const char *title, const char *description);

/* ---- prompt.c: the prompt flow and the agent's hooks ---- */

void acp_hook_delta(void *arg, struct agent *a, int reasoning, const char *msg_id, const char *s,
    size_t n);
void acp_hook_tool_progress(void *arg, struct agent *a, const char *call_id, const char *child_id,
    const char *text);
void acp_hook_turn_end(void *arg, struct agent *a, const char *first_msg, const json_t *reason);
void acp_hook_usage(void *arg, struct agent *a, long long used);
void acp_hook_compaction(void *arg, struct agent *a, const char *id, const char *status, const char *text);
/* ev: borrowed. */
void acp_observe_event(void *arg, struct sess *s, const json_t *ev);
/* Posts a prompt to the session's agent; steals id and prompt. */
void acp_prompt_start(struct acp_session *as, json_t *id, json_t *prompt);
/* Runs a checked prompt on an idle session: a slash command answers now, else a turn starts. */
json_t *acp_prompt_begin(struct acp_session *as, json_t *id, const json_t *prompt);
json_t *acp_m_session_prompt(struct acp_server *srv, struct acp_msg *m);
json_t *acp_m_session_cancel(struct acp_server *srv, struct acp_msg *m);

/* Children as ACP sessions (acp/children.c; docs/contract.md §22). */
/* The table, and srv->watch (the runtime's view of it, set as rt.watch for such a client). */
void acp_children_init(struct acp_server *srv);
void acp_children_free(struct acp_server *srv);
/* Sends a's ask (session/request_permission params, stolen) on its own session: requires_action
 * until the answer (then done runs) or a cancel (acp_child_ask_cancel); returns the request id. */
long acp_child_ask(struct acp_server *srv, struct agent *a, json_t *params, agent_client_done *done, void *arg);
/* A withdrawn request: 1 when it was a child's ask (its wait ended), else 0. */
int acp_child_ask_cancel(struct acp_server *srv, long id);
/* The client stated its capabilities anew (a second initialize): nothing of the old table stays. */
void acp_children_reset(struct acp_server *srv);
/* 1 when sid is a child's session and the client shows children as sessions. */
int acp_is_child_session(struct acp_server *srv, const char *sid);
/* The -32602 child_session answer to request id (borrowed) naming the child sid; new ref. */
json_t *acp_child_refuse(const json_t *id, const char *sid);
/* A load's replay of a child (docs/contract.md §22.4): its announcement before the call that made
 * it (title, description, running), and its last state after its history; new refs (updates). */
json_t *acp_child_replay_announce(struct acp_server *srv, const char *id);
json_t *acp_child_replay_state(struct acp_server *srv, const char *id);
/* After a root's session/load or session/resume answer: each continuable descendant announced
 * again, parent first, with what the client may do and its state now. */
void acp_children_resumed(struct acp_server *srv, const char *root);
/* session/cancel for sid: 1 when sid is a child's (its turn and its descendants' cancelled), else 0. */
int acp_child_cancel(struct acp_server *srv, const char *sid);

#endif
