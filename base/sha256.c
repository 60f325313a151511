/* SHA-256 as FIPS 180-4 §6.2 describes it: 64-byte blocks, big-endian words, 64 rounds. */
#include "base/sha256.h"

#include <string.h>

/* §4.2.2: the first 32 bits of the fractional parts of the cube roots of the first 64 primes. */
static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* §5.3.3: the first 32 bits of the fractional parts of the square roots of the first 8 primes. */
static const uint32_t sha256_h0[8] = {
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

static uint32_t
sha256_rotr(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

/* §6.2.2: one 64-byte block into the chaining state st; a..h are the standard's working variables. */
static void
sha256_block(uint32_t st[8], const unsigned char *p)
{
	uint32_t w[64];
	uint32_t a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];

	for (size_t t = 0; t < 16; t++, p += 4)
		w[t] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
	for (int t = 16; t < 64; t++) {
		uint32_t s0 = sha256_rotr(w[t - 15], 7) ^ sha256_rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
		uint32_t s1 = sha256_rotr(w[t - 2], 17) ^ sha256_rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
		w[t] = s1 + w[t - 7] + s0 + w[t - 16];
	}
	for (int t = 0; t < 64; t++) {
		uint32_t t1 = h + (sha256_rotr(e, 6) ^ sha256_rotr(e, 11) ^ sha256_rotr(e, 25)) +
			      ((e & f) ^ (~e & g)) + sha256_k[t] + w[t];
		uint32_t t2 = (sha256_rotr(a, 2) ^ sha256_rotr(a, 13) ^ sha256_rotr(a, 22)) +
			      ((a & b) ^ (a & c) ^ (b & c));
		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	st[0] += a;
	st[1] += b;
	st[2] += c;
	st[3] += d;
	st[4] += e;
	st[5] += f;
	st[6] += g;
	st[7] += h;
}

void
sha256_init(struct sha256 *s)
{
	memcpy(s->h, sha256_h0, sizeof(s->h));
	s->len = 0;
	s->fill = 0;
}

void
sha256_update(struct sha256 *s, const void *data, size_t len)
{
	const unsigned char *p = data;

	if (len == 0)
		return;		/* data may be NULL */
	s->len += len;
	if (s->fill > 0) {		/* top up the partial block first */
		size_t n = 64 - s->fill < len ? 64 - s->fill : len;
		memcpy(s->block + s->fill, p, n);
		s->fill += n;
		p += n;
		len -= n;
		if (s->fill < 64)
			return;
		sha256_block(s->h, s->block);
		s->fill = 0;
	}
	for (; len >= 64; p += 64, len -= 64)
		sha256_block(s->h, p);
	if (len > 0)
		memcpy(s->block, p, len);
	s->fill = len;
}

void
sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN])
{
	uint64_t bits = s->len * 8;	/* §5.1.1: the length is taken modulo 2^64 */

	/* §5.1.1: a 1 bit, zeros up to 56 bytes into a block, then the length as 64 bits. */
	s->block[s->fill++] = 0x80;
	if (s->fill > 56) {
		memset(s->block + s->fill, 0, 64 - s->fill);
		sha256_block(s->h, s->block);
		s->fill = 0;
	}
	memset(s->block + s->fill, 0, 56 - s->fill);
	for (unsigned i = 0; i < 8; i++)
		s->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_block(s->h, s->block);
	for (size_t i = 0; i < 8; i++, out += 4) {
		out[0] = (unsigned char)(s->h[i] >> 24);
		out[1] = (unsigned char)(s->h[i] >> 16);
		out[2] = (unsigned char)(s->h[i] >> 8);
		out[3] = (unsigned char)s->h[i];
	}
}

void
sha256(const void *data, size_t len, unsigned char out[SHA256_LEN])
{
	struct sha256 s;

	sha256_init(&s);
	sha256_update(&s, data, len);
	sha256_final(&s, out);
}

void
sha256_hex(const void *data, size_t len, char out[2 * SHA256_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char d[SHA256_LEN];

	sha256(data, len, d);
	for (size_t i = 0; i < SHA256_LEN; i++) {
		*out++ = digits[d[i] >> 4];
		*out++ = digits[d[i] & 15];
	}
	*out = '\0';
}
