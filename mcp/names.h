/*
 * The names the model sees for MCP tools (docs/contract.md §18, §20.1): mcp__<server>__<tool>, every byte
 * outside [A-Za-z0-9_-] made `_`. A name that sanitizing changed, or that is longer than
 * MCP_NAME_MAX, becomes its first (at most) 51 characters, `_`, and 12 hex digits of
 * SHA-256(<server> NUL <tool>): `a.b` and `a_b` never meet, and the name is never cut silently.
 * Two distinct pairs can still meet when a name holds `__` (server `a__b` tool `c` and server
 * `a` tool `b__c`): the caller that lists the tools checks the public names are unique.
 */
#ifndef MCP_NAMES_H
#define MCP_NAMES_H

#include "base/err.h"

#define MCP_NAME_MAX 64		/* characters of a public name, the NUL aside */

/* Writes the public name of server's tool (both borrowed, NUL-terminated) into out. */
void mcp_public_name(const char *server, const char *tool, char out[MCP_NAME_MAX + 1]);

/*
 * Checks an ACP mcpServers entry's name (borrowed): 0, or -1 with ERR_INVALID_PARAMS in e when
 * it is empty (its tools would be mcp____<tool> and its notices would name nobody). Every other
 * string is a valid name: the public names sanitize it, the log escapes it.
 */
int mcp_name_valid_server(const char *name, struct err *e);

#endif
