/*
 * The conversation a model is sent (docs/contract.md §19), derived from an agent's events and kept up to
 * date as they are appended: the chat messages since the latest compaction (its summary first,
 * as a user message), their serialized size, and what the estimate needs (the last reported
 * usage and the bytes appended since). Building a request costs the conversation, never the
 * log: a compacted session's requests stay bounded however long its log grows.
 */
#ifndef AGENT_CONV_H
#define AGENT_CONV_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Per message: the event it came from (the summary: its through) and its size in the request. */
struct agent_conv_meta {
	int64_t seq;
	size_t len;
};

struct agent_conv {
	json_t *msgs;		/* owned: [{role, content, ...}], the summary first after a compaction */
	struct agent_conv_meta *meta;	/* owned: one per message */
	size_t cap;
	size_t bytes;		/* the messages' compact JSON, plus one byte each for the commas */
	int64_t through;	/* the latest compaction's through, or -1 */
	long long usage;	/* prompt + completion tokens of the last response since then, or -1 */
	size_t bytes_since;	/* bytes of the messages appended after that response */
	unsigned attempts;	/* compaction attempts (context/compacted and compaction_failed) */
	json_t *plan;		/* the task list (docs/contract.md §26): the entries of the latest
				 * plan/updated, or of the latest compaction; owned; NULL: none yet */
};

void agent_conv_init(struct agent_conv *c);
void agent_conv_free(struct agent_conv *c);
/* Folds one appended event (ev borrowed; checked by the session layer). */
void agent_conv_fold(struct agent_conv *c, const json_t *ev);
/*
 * Rebuilds c from a whole log (events borrowed): from the latest context/compacted on, never
 * from the start. The incremental fold must always agree with it (tests/check_conv.c).
 */
void agent_conv_rebuild(struct agent_conv *c, const json_t *events);
/*
 * c (empty) rebuilt from a session's file the same way, reading back only the events from the
 * latest compaction's through on: from a live session (on the loop); or, from a session being
 * loaded (sess_loading_read done), begun on the reading thread: the cursor it returns (owned,
 * free with sess_cursor_free) holds what the fold needs, events [.., *n), so the fold may run on a
 * worker while the session is already live. fold_cursor returns 0, or -1 when cancel was set.
 */
struct sess;
struct sess_loading;
struct sess_cursor;
void agent_conv_from_sess(struct agent_conv *c, struct sess *s);
struct sess_cursor *agent_conv_begin_loading(struct agent_conv *c, const struct sess_loading *ld, size_t *n);
int agent_conv_fold_cursor(struct agent_conv *c, struct sess_cursor *cur, const atomic_int *cancel);
/* The through of a compaction at seq (data borrowed), clamped below it (a lying log cannot point
 * ahead): the messages after it stay verbatim. */
int64_t agent_conv_through(const json_t *data, int64_t seq);
/*
 * Estimated tokens of a request with this conversation (docs/contract.md §20.1): the last reported usage
 * plus a token per 4 bytes appended since; with no usage since the latest compaction, a token
 * per 4 bytes of the whole request (fixed: the bytes of the system prompt and tools).
 */
long long agent_conv_estimate(const struct agent_conv *c, size_t fixed);
/* The user message that carries a summary (docs/contract.md §19; docs/prompts.md), ending with the
 * task list as it was when compacting (plan: entries, borrowed; NULL or empty: nothing); returns
 * new ref. */
json_t *agent_conv_summary_message(const char *summary, const json_t *plan);
/* Text of a content block array: text blocks joined by newlines; returns owned. */
char *agent_blocks_text(const json_t *content, size_t *len);	/* len may be NULL */

/* The summary request's fixed texts (docs/prompts.md pins them). */
#define AGENT_COMPACT_SYSTEM                                                                        \
	"You summarise a conversation between a person and a coding agent so that the agent can "  \
	"continue the work from the summary alone."
#define AGENT_COMPACT_INSTRUCTION                                                                   \
	"Summarise the conversation so far for your own later use. Keep the task and what the "    \
	"person asked for, decisions taken, files read or changed with what was done to them, "    \
	"commands run and their outcome, subagents started and what they reported, errors still "   \
	"open, and the next steps. Be concise; leave out pleasantries and tool output that no "     \
	"longer matters."
#define AGENT_COMPACT_PREFIX "[The earlier conversation, summarised]\n"
#define AGENT_COMPACT_TASKS "\n\nCurrent task list:\n"	/* then "- [<status>] <content>\n" each */

#endif
