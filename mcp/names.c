/* Public names of MCP tools: sanitize, and hash whatever sanitizing or the length would lose. */
#include "mcp/names.h"

#include <string.h>

#include "base/sha256.h"

#define MCP_NAME_KEEP 51	/* characters kept ahead of the suffix */
#define MCP_NAME_HASH 12	/* hex digits of the suffix */

/* Whether byte c may stay as it is in a public name. */
static int
mcp_name_char_ok(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '-';
}

/* Appends s sanitized to out[*n..max); returns whether a byte was replaced (counted in full). */
static int
mcp_name_append(char *out, size_t *n, size_t max, const char *s)
{
	int changed = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (!mcp_name_char_ok(c))
			changed = 1;
		if (*n < max)
			out[*n] = mcp_name_char_ok(c) ? (char)c : '_';
		(*n)++;
	}
	return changed;
}

void
mcp_public_name(const char *server, const char *tool, char out[MCP_NAME_MAX + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char d[SHA256_LEN];
	struct sha256 h;
	size_t n = 0;
	int changed;

	/* Sanitize into out as far as it reaches; n counts the whole name's length. */
	mcp_name_append(out, &n, MCP_NAME_MAX, "mcp__");
	changed = mcp_name_append(out, &n, MCP_NAME_MAX, server);
	mcp_name_append(out, &n, MCP_NAME_MAX, "__");
	changed |= mcp_name_append(out, &n, MCP_NAME_MAX, tool);
	if (!changed && n <= MCP_NAME_MAX) {
		out[n] = '\0';
		return;
	}
	sha256_init(&h);
	sha256_update(&h, server, strlen(server));
	sha256_update(&h, "", 1);	/* the NUL between them: ("ab", "c") is not ("a", "bc") */
	sha256_update(&h, tool, strlen(tool));
	sha256_final(&h, d);
	if (n > MCP_NAME_KEEP)
		n = MCP_NAME_KEEP;
	out[n++] = '_';
	for (int i = 0; i < MCP_NAME_HASH; i++)
		out[n++] = digits[(d[i / 2] >> (i % 2 ? 0 : 4)) & 15];
	out[n] = '\0';
}

int
mcp_name_valid_server(const char *name, struct err *e)
{
	if (name[0] == '\0')
		return err_set(e, ERR_INVALID_PARAMS, "mcpServers: a server's name is empty");
	return 0;
}
