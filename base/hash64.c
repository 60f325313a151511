/*
 * Four independent lanes take 8-byte words in turn (32 bytes per round), each lane doing
 * v = (v ^ w) * K1; v ^= v >> 29. Every step is a bijection of v, so a change confined to one
 * word always changes its lane; the lanes run in parallel, so the loop is bound by throughput,
 * not by the multiplier's latency. The lanes, the tail and the length are then folded together
 * and finished with the usual 64-bit avalanche (xor-shift, multiply, twice).
 */
#include "base/hash64.h"

#include <string.h>

#define K1 0x9e3779b97f4a7c15ULL	/* 2^64 / golden ratio, odd */
#define K2 0xc2b2ae3d27d4eb4fULL
#define K3 0xff51afd7ed558ccdULL
#define K4 0xc4ceb9fe1a85ec53ULL

static inline uint64_t
hash_load(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

static inline uint64_t
hash_round(uint64_t v, uint64_t w)
{
	v = (v ^ w) * K1;
	return v ^ (v >> 29);
}

static inline uint64_t
hash_avalanche(uint64_t h)
{
	h ^= h >> 33;
	h *= K3;
	h ^= h >> 33;
	h *= K4;
	return h ^ (h >> 33);
}

uint64_t
hash64(const void *data, size_t len)
{
	const unsigned char *p = data, *end = p + len;
	uint64_t h = (uint64_t)len * K2;

	if (len >= 32) {
		uint64_t a = K1, b = K2, c = K3, d = K4;

		for (; end - p >= 32; p += 32) {
			a = hash_round(a, hash_load(p));
			b = hash_round(b, hash_load(p + 8));
			c = hash_round(c, hash_load(p + 16));
			d = hash_round(d, hash_load(p + 24));
		}
		h = hash_round(h, hash_avalanche(a));
		h = hash_round(h, hash_avalanche(b) + 1);
		h = hash_round(h, hash_avalanche(c) + 2);
		h = hash_round(h, hash_avalanche(d) + 3);
	}
	for (; end - p >= 8; p += 8)
		h = hash_round(h, hash_load(p));
	if (p < end) {
		unsigned char last[8] = { 0 };

		memcpy(last, p, (size_t)(end - p));
		h = hash_round(h, hash_load(last) ^ ((uint64_t)(end - p) << 56));
	}
	return hash_avalanche(h);
}
