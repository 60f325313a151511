/*
 * A fast 64-bit content hash: the fingerprint the observation record keeps (docs/contract.md §16.3) and
 * the line identity of the diff. Not cryptographic: it tells a changed file from the one that
 * was read, it does not withstand someone forging a collision. The value depends only on the
 * bytes (words are read little-endian), never on the process or the machine.
 */
#ifndef BASE_HASH64_H
#define BASE_HASH64_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash64(const void *data, size_t len);	/* data: borrowed */

#endif
