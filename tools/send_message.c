/* The send_message tool (docs/contract.md §6.6). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/subagent.h"
#include "base/xmalloc.h"
#include "tools/tools.h"

static char *
send_message_title(const struct tool *t, const json_t *args)
{
	const char *id = json_string_value(json_object_get(args, "agent_id"));

	(void)t;
	return xasprintf("Message %s", id ? id : "");
}

/* The result of a message delivered (message_id) or not (e). */
static void
send_message_result(struct tool_result *out, const char *target, const char *message_id, const struct err *e)
{
	json_t *output;
	char *text;

	if (message_id == NULL) {
		tool_result_error(out, e->code, "%s", e->msg);
		return;
	}
	text = xasprintf("message delivered to agent %s", target);
	output = json_object();		/* the id is generated (hex and dashes): nothing here can fail */
	json_object_set_new_nocheck(output, "messageId", json_string_nocheck(message_id));
	tool_result_set(out, text, output);
	snprintf(out->agent_id, sizeof(out->agent_id), "%s", target);
	free(text);
}

/* A message that waited for its target's log to be read (agent/subagent.h). */
static void
send_message_sent(void *arg, const char *target, const char *message_id, const struct err *e)
{
	struct tool_inv *inv = arg;
	struct tool_result r;

	memset(&r, 0, sizeof(r));
	inv->state = NULL;	/* the sending frees itself after this */
	send_message_result(&r, target, message_id, e);
	tool_inv_complete(inv, &r);
}

static void
send_message_cancel(struct tool_inv *inv)
{
	subagent_send_cancel(inv->state);
	inv->state = NULL;
}

static int
send_message_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	const char *target = json_string_value(json_object_get(args, "agent_id"));
	char msg_id[SESS_ID_LEN + 1];
	struct subagent_sending *pending;
	struct err e;
	int rc;

	err_clear(&e);
	rc = subagent_send_begin(inv->agent, target, json_string_value(json_object_get(args, "message")), msg_id,
	    send_message_sent, inv, &pending, &e);
	if (rc == 1) {
		inv->state = pending;
		inv->cancel = send_message_cancel;
		return TOOL_PENDING;
	}
	send_message_result(out, target, rc == 0 ? msg_id : NULL, &e);
	return TOOL_DONE;
}

const struct tool tool_send_message = {
	.name = "send_message",
	.description =
	    "Send a message to an agent. A working agent receives it at its next step; an idle agent "
	    "starts a new turn with it. Returns delivery confirmation, not the agent's answer.",
	.schema =
	    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"agent_id\",\"message\"],"
	    "\"properties\":{"
	    "\"agent_id\":{\"type\":\"string\",\"description\":\"The agent id of your direct continuable "
	    "child, or your direct parent when you are a resident continuable child.\"},"
	    "\"message\":{\"type\":\"string\",\"description\":\"The message to deliver to the agent.\"}}}",
	.kind = "other",
	.concurrency_safe = 0,
	.title = send_message_title,
	.run = send_message_run,
};
