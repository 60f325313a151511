/* The chat's own commands (chat/commands.h). */
#include "chat/commands.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/imgtype.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

static const struct {
	const char *name;
	enum chat_cmd cmd;
} chat_cmds[] = {
	{ "/help", CHAT_CMD_HELP },
	{ "/model", CHAT_CMD_MODEL },
	{ "/mode", CHAT_CMD_MODE },
	{ "/image", CHAT_CMD_IMAGE },
};

enum chat_cmd
chat_command(const char *line, const char **arg, size_t *len)
{
	const char *p = line + strspn(line, " \t");

	if (strchr(line, '\n'))
		return CHAT_CMD_NONE;	/* a prompt of several lines is a prompt */

	for (size_t i = 0; i < sizeof(chat_cmds) / sizeof(chat_cmds[0]); i++) {
		size_t n = strlen(chat_cmds[i].name);
		if (strncmp(p, chat_cmds[i].name, n) != 0 || (p[n] != '\0' && p[n] != ' ' && p[n] != '\t'))
			continue;
		const char *a = p + n + strspn(p + n, " \t");
		size_t l = strlen(a);
		while (l > 0 && (a[l - 1] == ' ' || a[l - 1] == '\t'))
			l--;
		*arg = a;
		*len = l;
		return chat_cmds[i].cmd;
	}
	return CHAT_CMD_NONE;
}

json_t *
chat_image_block(const char *path, char *err, size_t size, size_t *bytes)
{
	struct stat st;
	unsigned char *data;
	const char *mime;
	char *b64;
	size_t got = 0;
	json_t *blk;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);	/* a FIFO does not hold the chat */

	if (fd < 0) {
		snprintf(err, size, "%s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, size, "not a regular file");
		close(fd);
		return NULL;
	}
	if (st.st_size == 0 || (size_t)st.st_size > CHAT_IMAGE_MAX) {
		snprintf(err, size, st.st_size == 0 ? "the file is empty" : "larger than 20 MiB (%lld bytes)",
		    (long long)st.st_size);
		close(fd);
		return NULL;
	}
	data = xmalloc((size_t)st.st_size);
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got != (size_t)st.st_size || (mime = imgtype_of(data, got)) == NULL) {
		snprintf(err, size, got != (size_t)st.st_size ? "cannot be read whole" :
		    "not an image of a known type (" IMGTYPE_LIST ")");
		free(data);
		return NULL;
	}
	b64 = xmalloc(BASE64_ENCODED_LEN(got) + 1);
	b64[base64_encode(data, got, b64)] = '\0';
	free(data);
	blk = xjson_pack("{s:s, s:s, s:s}", "type", "image", "mimeType", mime, "data", b64);
	free(b64);
	*bytes = got;
	return blk;
}
