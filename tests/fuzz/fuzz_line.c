/*
 * Line framing + JSON-RPC classification + dispatch of every method with
 * arbitrary params, against one live server (replay model, temp state dir).
 * The first input byte picks the read size, so splits are fuzzed too.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp/server.h"

static struct acp_server *srv;
static struct ev_loop *loop;

static void
fuzz_setup(void)
{
	char dir[] = "/tmp/acp-fuzz-XXXXXX", rec[80];
	struct acp_options o = { 0 };
	struct err e;
	FILE *f;

	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(rec, sizeof(rec), "%s/rec.json", dir);
	f = fopen(rec, "w");
	fputs("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"text\":\"hi\"},"
	    "{\"tool_calls\":[{\"name\":\"list_agents\",\"arguments\":{}}]},{\"hang\":true}]}]}", f);
	fclose(f);
	o.state_dir = strdup(dir);
	o.model = "replay";
	o.recording = strdup(rec);
	o.profile = "default";
	o.sync = SESS_SYNC_NONE;
	o.max_depth = 3;
	o.max_active = 8;
	o.max_steps = 5;
	o.deterministic = 1;
	loop = ev_loop_new(0);
	srv = calloc(1, sizeof(*srv));
	err_clear(&e);
	if (acp_server_init(srv, loop, open("/dev/null", O_RDONLY), open("/dev/null", O_WRONLY), &o, &e) < 0)
		abort();
	reader_pause(&srv->reader);
	/* Every input can use a session and a live prompt. */
	const char *boot[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"/tmp\",\"mcpServers\":[]}}",
	};
	for (size_t i = 0; i < 2; i++)
		acp_server_line(srv, boot[i], strlen(boot[i]));
	runq_drain(&srv->runq);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	size_t step;

	if (srv == NULL)
		fuzz_setup();
	if (size == 0)
		return 0;
	step = (size_t)data[0] % 64 + 1;
	data++;
	size--;
	for (size_t off = 0; off < size; off += step)
		frame_feed(&srv->reader.frame, (const char *)data + off, off + step > size ? size - off : step);
	frame_eof(&srv->reader.frame);
	runq_drain(&srv->runq);
	/* Drop output the /dev/null writer could not take, so memory stays bounded. */
	buf_consume(&srv->wq.out, srv->wq.out.len);
	srv->wq.off = 0;
	return 0;
}
