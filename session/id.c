/* Session id parsing and generation. */
#include "session/id.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int
sess_id_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

int
sess_id_validn(const char *s, size_t n)
{
	if (n != SESS_ID_LEN)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!sess_id_hex(s[i])) {
			return 0;
		}
	}
	if (s[14] != '4')
		return 0;
	return s[19] == '8' || s[19] == '9' || s[19] == 'a' || s[19] == 'b';
}

int
sess_id_valid(const char *s)
{
	return s != NULL && sess_id_validn(s, strlen(s));
}

uint64_t
sess_id_counter(const char *s)
{
	uint64_t v = 0;

	if (!sess_id_valid(s) || strncmp(s, "00000000-0000-4000-8000-", 24) != 0)
		return 0;
	for (int i = 24; i < 36; i++)
		v = v * 16 + (uint64_t)(s[i] <= '9' ? s[i] - '0' : s[i] - 'a' + 10);
	return v;
}

void
sess_ids_init(struct sess_ids *g, int deterministic)
{
	g->deterministic = deterministic;
	g->counter = 0;
	g->urandom_fd = deterministic ? -1 : open("/dev/urandom", O_RDONLY | O_CLOEXEC);
}

void
sess_ids_close(struct sess_ids *g)
{
	if (g->urandom_fd >= 0)
		close(g->urandom_fd);
	g->urandom_fd = -1;
}

void
sess_ids_seen(struct sess_ids *g, const char *id)
{
	uint64_t c = sess_id_counter(id);

	if (c > g->counter)
		g->counter = c;
}

void
sess_ids_new(struct sess_ids *g, char out[SESS_ID_LEN + 1])
{
	unsigned char r[16];

	if (g->deterministic) {
		g->counter++;
		snprintf(out, SESS_ID_LEN + 1, "00000000-0000-4000-8000-%012llx",
		    (unsigned long long)(g->counter & 0xffffffffffffULL));
		return;
	}
	if (g->urandom_fd < 0 || read(g->urandom_fd, r, sizeof(r)) != (ssize_t)sizeof(r)) {
		/* No /dev/urandom: mix time and a counter; uniqueness within the process holds. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t a = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ++g->counter;
		uint64_t b = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ (a << 7);
		memcpy(r, &a, 8);
		memcpy(r + 8, &b, 8);
	}
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	snprintf(out, SESS_ID_LEN + 1,
	    "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2],
	    r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
}
