/* The keys of a permission ask and the options they choose. */
#include "chat/ask.h"

#include <string.h>

static const struct {
	char key;
	const char *kind;
} chat_ask_keys_table[] = {
	{ 'a', "allow_once" },
	{ 'A', "allow_always" },
	{ 'r', "reject_once" },
	{ 'R', "reject_always" },
};

#define CHAT_ASK_NKEYS (sizeof(chat_ask_keys_table) / sizeof(chat_ask_keys_table[0]))

static const json_t *
chat_ask_by_kind(const json_t *options, const char *kind)
{
	size_t i;
	const json_t *o;

	json_array_foreach(options, i, o) {
		const char *k = json_string_value(json_object_get(o, "kind"));
		if (k && strcmp(k, kind) == 0 && json_is_string(json_object_get(o, "optionId")))
			return o;
	}
	return NULL;
}

const json_t *
chat_ask_option(const json_t *options, int key)
{
	for (size_t i = 0; i < CHAT_ASK_NKEYS; i++)
		if (chat_ask_keys_table[i].key == key)
			return chat_ask_by_kind(options, chat_ask_keys_table[i].kind);
	return NULL;
}

void
chat_ask_menu(const json_t *options, struct buf *out)
{
	int first = 1;

	for (size_t i = 0; i < CHAT_ASK_NKEYS; i++) {
		const json_t *o = chat_ask_by_kind(options, chat_ask_keys_table[i].kind);
		const char *name;
		if (o == NULL)
			continue;
		name = json_string_value(json_object_get(o, "name"));
		buf_printf(out, "%s[%c] %s", first ? "" : "  ", chat_ask_keys_table[i].key,
		    name ? name : json_string_value(json_object_get(o, "optionId")));
		first = 0;
	}
}

void
chat_ask_keys(const json_t *options, struct buf *out)
{
	char keys[CHAT_ASK_NKEYS];
	size_t n = 0;

	for (size_t i = 0; i < CHAT_ASK_NKEYS; i++)
		if (chat_ask_by_kind(options, chat_ask_keys_table[i].kind))
			keys[n++] = chat_ask_keys_table[i].key;
	for (size_t i = 0; i < n; i++)
		buf_printf(out, "%s%c", i == 0 ? "" : i + 1 == n ? " or " : ", ", keys[i]);
}

int
chat_ask_line_key(const char *line)
{
	int key = 0;

	for (const char *p = line; *p; p++) {
		if (*p == ' ' || *p == '\t' || *p == '\r')
			continue;
		if (key)
			return 0;
		key = (unsigned char)*p;
	}
	return key;
}
