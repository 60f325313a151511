/*
 * A stdio MCP server (docs/contract.md §18): the process, started with base/spawn (its own group, death with
 * us, cwd = the workspace, PATH search, our environment minus ACP_AGENT_* plus the ACP env),
 * newline-delimited JSON-RPC on its stdin/stdout (base/wq, base/reader), its stderr logged at
 * debug as "[mcp:<name>] <line>" with the last 4 KiB kept. A line that is not a JSON object is
 * logged at debug and skipped. The exit is watched with a pidfd (a 20 ms waitpid poll where
 * there is none); at the exit what is left of its group is SIGKILLed and reaped, stdout is
 * drained, and gone reports "exited with status N" or "killed by SIGNAME".
 * close: stdin closed, SIGTERM to the group after 2 s, SIGKILL 2 s later.
 */
#ifndef MCP_STDIO_H
#define MCP_STDIO_H

#include <ev.h>
#include <jansson.h>

#include "base/err.h"
#include "mcp/transport.h"

#define MCP_STDIO_GRACE 2.0		/* seconds between the steps of close */
#define MCP_STDERR_KEEP 4096

/*
 * Starts command (args: [string], env: [{name, value}], both borrowed, may be NULL) in cwd.
 * Returns an owned transport, or NULL with e (MCP_START_FAILED "cannot run <command>: <why>",
 * "cannot enter <cwd>: <why>"). cb is copied.
 */
struct mcp_transport *mcp_stdio_new(struct ev_loop *loop, const char *name, const char *command,
    const json_t *args, const json_t *env, const char *cwd, const struct mcp_transport_cb *cb,
    struct err *e);
/* The server's pid (tests); 0 once reaped. */
int mcp_stdio_pid(const struct mcp_transport *t);

#endif
