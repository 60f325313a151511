/*
 * The chat's client (docs/contract.md §21): runs the agent as a child (this very program, under setsid, on
 * two pipes), speaks ACP v1 to it and drives the person's side: a line is a prompt, an ask reads a
 * key, Ctrl-C cancels the turn, Ctrl-D (EOF) ends. The child is owned: always waited for (stdin
 * closed, then SIGTERM after CHAT_GRACE seconds, then SIGKILL) and reaped.
 */
#ifndef CHAT_CLIENT_H
#define CHAT_CLIENT_H

#define CHAT_GRACE 5.0		/* seconds the agent has to exit after its stdin closes */
#define CHAT_KILL_AFTER 2.0	/* then seconds after SIGTERM before SIGKILL */

struct chat_opts {
	const char *session;	/* --session: load it; NULL: a new session here */
	char *const *agent_argv;	/* the child's argv (borrowed, NULL-terminated) */
	const char *state_dir;		/* the agent's state directory: the chat's history is kept there */
	int list;			/* --list: print the sessions and exit */
};

/* Runs the chat until EOF or the agent ends; returns the exit status. o: borrowed. */
int chat_client_run(const struct chat_opts *o);

#endif
