/*
 * A 20 MiB image prompt (docs/contract.md §27) through the openai provider, against the mock
 * server: the agent's peak RSS (VmHWM) while the image is checked, stored and sent, as a ratio to
 * the image's size (target: under 3x), the same peak over the agent's own before the prompt, and
 * the size of the log line that references it.
 *
 *   bench_image AGENT MOCK
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base64.h"
#include "bench/util.h"

#define IMAGE_BYTES ((size_t)20 << 20)

static char line[1 << 16];

/* Reads lines until one holds needle (left in line); 0, or -1 at EOF. */
static int
wait_line(FILE *from, const char *needle)
{
	while (fgets(line, sizeof(line), from))
		if (strstr(line, needle))
			return 0;
	return -1;
}

int
main(int argc, char **argv)
{
	char tmp[] = "/tmp/bench-image-XXXXXX", path[800], url[100], state[600];
	unsigned char *img;
	char *b64;
	FILE *to, *from, *mto, *mfrom, *f;
	int port;
	pid_t mock, agent;
	long before, peak, logline = 0;
	char session[100], *sid;
	double t0, t1;

	if (argc != 3 || mkdtemp(tmp) == NULL)
		return 2;
	/* one answer; the mock logs nothing we need */
	snprintf(path, sizeof(path), "%s/script.json", tmp);
	f = fopen(path, "w");
	fputs("{\"responses\":[{\"events\":[{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a picture\"},"
	    "\"finish_reason\":\"stop\"}]}]}]}", f);
	fclose(f);
	char port_file[600];
	snprintf(port_file, sizeof(port_file), "%s/port", tmp);
	const char *margv[] = { argv[2], "--script", path, "--port-file", port_file, "--log", "/dev/null", NULL };
	mock = bench_spawn(margv, &mto, &mfrom);
	if ((port = bench_wait_port(port_file)) == 0)
		return 1;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);
	setenv("ACP_AGENT_BASE_URL", url, 1);
	setenv("ACP_AGENT_API_KEY", "bench-key", 1);
	snprintf(state, sizeof(state), "%s/state", tmp);
	const char *aargv[] = { argv[1], "--state-dir", state, "--tools", "none", NULL };
	agent = bench_spawn(aargv, &to, &from);
	fputs("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n", to);
	fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"%s\","
	    "\"mcpServers\":[]}}\n", tmp);
	fflush(to);
	if (wait_line(from, "\"id\":2") < 0 || (sid = strstr(line, "\"sessionId\":\"")) == NULL)
		return 1;
	sid += 13;
	*strchr(sid, '"') = '\0';
	snprintf(session, sizeof(session), "%s", sid);
	before = bench_proc_kb(agent, "VmHWM:");

	/* A PNG signature, then bytes that do not compress (a photo's, roughly). */
	img = malloc(IMAGE_BYTES);
	unsigned s = 1;
	for (size_t i = 0; i < IMAGE_BYTES; i++) {
		s = s * 1103515245u + 12345u;
		img[i] = (unsigned char)(s >> 16);
	}
	memcpy(img, "\x89PNG\r\n\x1a\n", 8);
	b64 = malloc(BASE64_ENCODED_LEN(IMAGE_BYTES) + 1);
	b64[base64_encode(img, IMAGE_BYTES, b64)] = '\0';
	free(img);
	t0 = bench_now_ms();
	fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"%s\","
	    "\"prompt\":[{\"type\":\"text\",\"text\":\"What is this?\"},{\"type\":\"image\",\"mimeType\":"
	    "\"image/png\",\"data\":\"%s\"}]}}\n", session, b64);
	fflush(to);
	free(b64);
	if (wait_line(from, "\"id\":3") < 0 || strstr(line, "end_turn") == NULL) {
		fprintf(stderr, "bench_image: the prompt failed: %.300s\n", line);
		return 1;
	}
	t1 = bench_now_ms();
	peak = bench_proc_kb(agent, "VmHWM:");
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, session);
	if ((f = fopen(path, "r")) != NULL) {
		while (fgets(line, sizeof(line), f))
			if (strstr(line, "\"user/message\""))
				logline = (long)strlen(line);
		fclose(f);
	}
	printf("image_prompt[20 MiB]: %.0f ms from the line to the answer (stored, sent, answered)\n", t1 - t0);
	printf("image_peak_rss[20 MiB]: %ld kB (%ld kB before the prompt)\n", peak, before);
	printf("ratio[image peak_rss / image size]: %.2fx (target < 3x)\n", (double)peak * 1024 / (double)IMAGE_BYTES);
	printf("ratio[image peak_rss growth / image size]: %.2fx\n", (double)(peak - before) * 1024 / (double)IMAGE_BYTES);
	printf("image_log_line: %ld bytes (the image is referenced, not inlined)\n", logline);
	fclose(to);
	kill(mock, SIGTERM);
	waitpid(agent, NULL, 0);
	waitpid(mock, NULL, 0);
	snprintf(path, sizeof(path), "rm -rf '%s'", tmp);
	return system(path) == 0 ? 0 : 1;
}
