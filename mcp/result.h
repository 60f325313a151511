/*
 * The text the model sees for an MCP tools/call result (docs/contract.md §18), blocks joined by "\n":
 *   text                      its text
 *   resource_link             <name> <uri>
 *   resource with text        <uri> "\n" <text>
 *   resource with blob        [<mimeType>, <n> bytes omitted]  (application/octet-stream if none)
 *   image, audio              [<mimeType>, <n> bytes omitted]  (n: the base64 data's decoded size)
 *   any other type            [<type> content omitted]
 * With no content blocks, structuredContent's compact JSON (jansson's key order). NUL bytes
 * (\u0000 in the JSON) become U+FFFD. The 256 KiB cap and the spill are the caller's.
 */
#ifndef MCP_RESULT_H
#define MCP_RESULT_H

#include <jansson.h>

#include "base/err.h"

/*
 * Renders result (borrowed). Returns owned text and sets *is_error (may be NULL; 0 on failure) to isError, for
 * the caller's "Error: <text>" with MCP_TOOL_ERROR; or NULL with ERR_MCP_PROTOCOL_ERROR in e when
 * the result breaks the MCP schema (a field of the wrong type, a block without its fields), the
 * message naming the field ("malformed tools/call result: content[2]: expected an object").
 */
char *mcp_result_text(const json_t *result, int *is_error, struct err *e);

#endif
