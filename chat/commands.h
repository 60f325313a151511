/*
 * The chat's own commands (docs/contract.md §21): a line that is one of them is acted on by the
 * chat; any other line is a prompt (the agent's slash commands included).
 */
#ifndef CHAT_COMMANDS_H
#define CHAT_COMMANDS_H

#include <stddef.h>

#include <jansson.h>

enum chat_cmd { CHAT_CMD_NONE, CHAT_CMD_HELP, CHAT_CMD_MODEL, CHAT_CMD_MODE, CHAT_CMD_IMAGE };

#define CHAT_IMAGE_MAX ((size_t)20 << 20)	/* the agent's limit: bigger is refused here */

/* The command line is, with its argument (white space around it dropped; "" when none) in
 * *arg[0..*len); CHAT_CMD_NONE for a prompt. line: borrowed, NUL-terminated. */
enum chat_cmd chat_command(const char *line, const char **arg, size_t *len);
/* An image block for the file at path (new ref): its type from its first bytes, its bytes in
 * base64; NULL with why in err (not readable, not an image of a known type, empty, too big).
 * *bytes: its size. */
json_t *chat_image_block(const char *path, char *err, size_t size, size_t *bytes);

#endif
