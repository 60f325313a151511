/*
 * Every error code of the program, in one table. A row names the code, its wire names and what it
 * becomes on the protocol:
 *   kind  the client-facing name (JSON-RPC error data.kind, turn-end reason code), lower case;
 *   tool  the model-facing name (a failed tool call's error.code, docs/contract.md §6.9), upper case;
 *   rpc   the JSON-RPC error code when it reaches the client as an error reply, 0 when it never does;
 *   text  the default message (used when a caller gives none; docs/tools.md lists them).
 * A code that lives on one surface only leaves the other name NULL; err_kind and err_tool then
 * answer with the one it has. Callers pass and compare enum values, never strings.
 */
#ifndef BASE_ERRCODE_H
#define BASE_ERRCODE_H

#define ERR_CODES(X)                                                                                  \
	/* the protocol (acp/) */                                                                     \
	X(PARSE_ERROR, "parse_error", NULL, -32700, "the line is not valid JSON")                     \
	X(INVALID_REQUEST, "invalid_request", NULL, -32600, "not a valid JSON-RPC 2.0 message")       \
	X(TOO_DEEP, "too_deep", NULL, -32600, "nesting deeper than 128 levels")                       \
	X(LINE_TOO_LONG, "line_too_long", NULL, -32600, "the line is longer than 64 MiB")             \
	X(NOT_INITIALIZED, "not_initialized", NULL, -32600, "initialize must come first")             \
	X(METHOD_NOT_FOUND, "method_not_found", NULL, -32601, "unknown method")                       \
	X(INVALID_PARAMS, "invalid_params", NULL, -32602, "invalid parameters")                       \
	X(UNKNOWN_SESSION, "unknown_session", NULL, -32002, "unknown session")                        \
	X(CHILD_SESSION, "child_session", NULL, -32602, "only session/cancel applies to a subagent session") \
	X(INTERNAL, "internal", NULL, -32603, "internal error")                                       \
	X(TURN_FAILED, "turn_failed", NULL, -32603, "the turn failed")                                \
	/* sessions on disk (session/), also met by tools */                                          \
	X(SESSION_LOG_IO, "session_log_io", "SESSION_LOG_IO", -32603, "the session log cannot be written") \
	X(SESSION_BUSY, "session_busy", "SESSION_BUSY", -32603, "the session is held by another process") \
	X(SESSION_CORRUPT, "session_corrupt", NULL, -32603, "the session log is corrupt")             \
	X(SESSION_UNSUPPORTED, "session_unsupported", NULL, -32603, "the session log has a newer format") \
	/* start-up (acp/main.c, model/) */                                                           \
	X(USAGE, "usage", NULL, 0, "invalid command line or environment")                             \
	X(INVALID_RECORDING, "invalid_recording", NULL, 0, "the recording is not valid")              \
	/* tool calls (agent/, tools/) */                                                             \
	X(INVALID_ARGUMENT, NULL, "INVALID_ARGUMENT", 0, "invalid arguments")                         \
	X(UNKNOWN_TOOL, NULL, "UNKNOWN_TOOL", 0, "unknown tool")                                      \
	X(CANCELLED, NULL, "CANCELLED", 0, "the tool call was cancelled")                             \
	/* repair closes calls a crash left open (session/repair.c) */                                 \
	X(TOOL_NOT_STARTED, NULL, "TOOL_NOT_STARTED", 0, "the tool call never started")               \
	X(TOOL_OUTCOME_UNKNOWN, NULL, "TOOL_OUTCOME_UNKNOWN", 0, "the tool call's outcome is unknown") \
	/* the editor's answers to our requests (docs/contract.md §16.4) */                                     \
	X(CLIENT_ERROR, NULL, "CLIENT_ERROR", 0, "the editor refused the request")                    \
	X(CLIENT_TIMEOUT, NULL, "CLIENT_TIMEOUT", 0, "the editor did not answer in time")             \
	/* the workspace (docs/contract.md §16.2, §16.3; workspace/) */                                         \
	X(FS_OUTSIDE_WORKSPACE, NULL, "FS_OUTSIDE_WORKSPACE", 0, "the path is outside the workspace") \
	X(FS_NOT_FOUND, NULL, "FS_NOT_FOUND", 0, "the file does not exist")                           \
	X(FS_IS_DIRECTORY, NULL, "FS_IS_DIRECTORY", 0, "the path is a directory")                     \
	X(FS_TOO_LARGE, NULL, "FS_TOO_LARGE", 0, "the file is larger than the limit")                 \
	X(FS_BINARY, NULL, "FS_BINARY", 0, "the file is binary")                                      \
	X(FS_NOT_UTF8, NULL, "FS_NOT_UTF8", 0, "the text is not valid UTF-8")                         \
	X(FS_NOT_OBSERVED, NULL, "FS_NOT_OBSERVED", 0, "the file has not been read")                  \
	X(FS_STALE_VERSION, NULL, "FS_STALE_VERSION", 0, "the file changed since it was last read")   \
	X(FS_IO, NULL, "FS_IO", 0, "the file cannot be read or written")                              \
	X(EDIT_NO_MATCH, NULL, "EDIT_NO_MATCH", 0, "old_string was not found")                        \
	X(EDIT_AMBIGUOUS, NULL, "EDIT_AMBIGUOUS", 0, "old_string occurs more than once")              \
	X(TOOL_TIMEOUT, NULL, "TOOL_TIMEOUT", 0, "the command timed out")                             \
	X(PROC_SPILL_EXISTS, NULL, "PROC_SPILL_EXISTS", 0, "the spill file exists already")           \
	X(PROC_SPILL_IO, NULL, "PROC_SPILL_IO", 0, "the spill file cannot be created")                \
	X(PROC_SPAWN_FAILED, NULL, "PROC_SPAWN_FAILED", 0, "the command cannot be started")           \
	X(JOB_NOT_FOUND, NULL, "JOB_NOT_FOUND", 0, "no such background job")                          \
	X(JOB_LIMIT_REACHED, NULL, "JOB_LIMIT_REACHED", 0, "too many background jobs run at once")    \
	/* permissions (docs/contract.md §17) */                                                                \
	X(PERMISSION_REJECTED, NULL, "PERMISSION_REJECTED", 0, "the user rejected the call")          \
	X(PERMISSION_MODE_READ_ONLY, NULL, "PERMISSION_MODE_READ_ONLY", 0, "the call is not allowed in read-only mode") \
	/* delegation (docs/contract.md §6.9) */                                                                  \
	X(NOT_RESUMABLE, NULL, "NOT_RESUMABLE", 0, "the subagent cannot be resumed")                  \
	X(UNAUTHORIZED, NULL, "UNAUTHORIZED", 0, "the caller may not act on that agent")              \
	X(PARENT_UNAVAILABLE, NULL, "PARENT_UNAVAILABLE", 0, "the direct parent is not live")         \
	X(ACTIVATION_LIMIT_REACHED, NULL, "ACTIVATION_LIMIT_REACHED", 0, "the active child limit is reached") \
	X(DEPTH_EXCEEDED, NULL, "DEPTH_EXCEEDED", 0, "the delegation depth limit is reached")         \
	X(ISOLATION_UNAVAILABLE, NULL, "ISOLATION_UNAVAILABLE", 0, "worktree isolation is not available") \
	X(ISOLATION_FAILED, NULL, "ISOLATION_FAILED", 0, "the worktree could not be made")            \
	X(SUBAGENT_FAILED, NULL, "SUBAGENT_FAILED", 0, "the subagent run failed")                     \
	/* the Team (docs/contract.md §9) */                                                                      \
	X(TEAM_INVALID_ARGUMENT, NULL, "TEAM_INVALID_ARGUMENT", 0, "invalid Team arguments")          \
	X(TEAM_LEAD_REQUIRED, NULL, "TEAM_LEAD_REQUIRED", 0, "only the Lead can do that")             \
	X(TEAM_INVALID_MEMBER_NAME, NULL, "TEAM_INVALID_MEMBER_NAME", 0, "invalid teammate name")     \
	X(TEAM_MEMBER_NAME_TAKEN, NULL, "TEAM_MEMBER_NAME_TAKEN", 0, "the name was taken before")     \
	X(TEAM_MEMBER_LIMIT, NULL, "TEAM_MEMBER_LIMIT", 0, "the Team is full")                        \
	X(TEAM_MEMBER_NOT_FOUND, NULL, "TEAM_MEMBER_NOT_FOUND", 0, "no such Team member")             \
	X(TEAM_SELF_MESSAGE, NULL, "TEAM_SELF_MESSAGE", 0, "a member cannot message itself")          \
	X(TEAM_MESSAGE_TOO_LARGE, NULL, "TEAM_MESSAGE_TOO_LARGE", 0, "the message is too large")      \
	X(TEAM_MAILBOX_FULL, NULL, "TEAM_MAILBOX_FULL", 0, "the mailbox is full")                     \
	X(TEAM_INVALID_TIMEOUT, NULL, "TEAM_INVALID_TIMEOUT", 0, "invalid wait timeout")              \
	X(TEAM_TASK_NOT_FOUND, NULL, "TEAM_TASK_NOT_FOUND", 0, "no such task")                        \
	X(TEAM_TASK_LIMIT, NULL, "TEAM_TASK_LIMIT", 0, "the task board is full")                      \
	X(TEAM_TASK_UNAUTHORIZED, NULL, "TEAM_TASK_UNAUTHORIZED", 0, "the caller may not change that task") \
	X(TEAM_TASK_STALE_REVISION, NULL, "TEAM_TASK_STALE_REVISION", 0, "the task changed since that revision") \
	X(TEAM_TASK_BLOCKED, NULL, "TEAM_TASK_BLOCKED", 0, "the task is blocked by unfinished tasks") \
	X(TEAM_TASK_ALREADY_CLAIMED, NULL, "TEAM_TASK_ALREADY_CLAIMED", 0, "another member owns the task") \
	X(TEAM_TASK_HAS_DEPENDENTS, NULL, "TEAM_TASK_HAS_DEPENDENTS", 0, "other tasks depend on the task") \
	X(TEAM_TASK_DEPENDENCY_CYCLE, NULL, "TEAM_TASK_DEPENDENCY_CYCLE", 0, "the dependencies would form a cycle") \
	/* MCP servers (docs/contract.md §18) */                                                                   \
	X(MCP_TOOL_ERROR, NULL, "MCP_TOOL_ERROR", 0, "the MCP tool reported an error")                \
	X(MCP_PROTOCOL_ERROR, NULL, "MCP_PROTOCOL_ERROR", 0, "the MCP server answered an error or a malformed result") \
	X(MCP_TIMEOUT, NULL, "MCP_TIMEOUT", 0, "the MCP server did not answer in time")               \
	X(MCP_SERVER_EXITED, NULL, "MCP_SERVER_EXITED", 0, "the MCP server exited during the call")   \
	X(MCP_NOT_READY, NULL, "MCP_NOT_READY", 0, "the MCP server is not ready")                     \
	X(MCP_START_FAILED, NULL, "MCP_START_FAILED", 0, "the MCP server cannot be started")          \
	/* the model provider (model/): a turn's end reason code */                                   \
	X(MODEL_ERROR, NULL, "MODEL_ERROR", 0, "the model server reported an error")                  \
	X(MODEL_STREAM, NULL, "MODEL_STREAM", 0, "the model stream is malformed")                     \
	X(MODEL_TIMEOUT, NULL, "MODEL_TIMEOUT", 0, "the model server did not answer in time")         \
	X(MODEL_CONNECTION, NULL, "MODEL_CONNECTION", 0, "the model server cannot be reached")        \
	X(MODEL_AUTH, NULL, "MODEL_AUTH", 0, "the model server rejected the API key")                 \
	X(MODEL_HTTP, NULL, "MODEL_HTTP", 0, "the model server answered an HTTP error")               \
	X(MODEL_REQUEST, NULL, "MODEL_REQUEST", 0, "the model request could not be built")           \
	X(MODEL_CONTEXT_LENGTH, NULL, "MODEL_CONTEXT_LENGTH", 0, "the request is longer than the model's context window") \
	X(REPLAY_EXHAUSTED, NULL, "REPLAY_EXHAUSTED", 0, "the recording has no reply left for this request") \
	X(REPLAY_MISMATCH, NULL, "REPLAY_MISMATCH", 0, "the request does not match the recording")

enum err_code {
	ERR_NONE,
#define ERR_ENUM_(id, kind, tool, rpc, text) ERR_##id,
	ERR_CODES(ERR_ENUM_)
#undef ERR_ENUM_
	ERR_COUNT
};

const char *err_kind(enum err_code c);	/* client-facing name, else the tool name; NULL for ERR_NONE */
const char *err_tool(enum err_code c);	/* model-facing name, else the kind */
int err_rpc(enum err_code c);		/* JSON-RPC error code, 0 when it is never one */
const char *err_text(enum err_code c);	/* the default message */

#endif
