/*
 * Content-addressed files (docs/contract.md §27, images): a blob is stored once as
 * <dir>/<sha256 of its bytes, 64 lower-case hex digits>, mode 0600, and read back only by a name
 * that is such a digest and a size that matches. Reading checks the digest as it goes (the caller
 * feeds what it read to a struct sha256 and compares at the end: blob_check).
 */
#ifndef BASE_BLOB_H
#define BASE_BLOB_H

#include <stddef.h>

#include "base/err.h"
#include "base/sha256.h"

#define BLOB_NAME_LEN ((size_t)2 * SHA256_LEN)

/* 1 when name is 64 lower-case hex digits (and nothing else). */
int blob_name_valid(const char *name);

/*
 * Stores data[0..len) under dir (made 0700 when missing), its name into name. A blob already
 * there with that name and size is kept as it is. sync: fsync the file and the directory before
 * returning. 0, or -1 with e (ERR_INTERNAL: the directory or the file cannot be written).
 */
int blob_put(const char *dir, const void *data, size_t len, int sync, char name[BLOB_NAME_LEN + 1],
    struct err *e);

/* Opens dir/name for reading, checked: a valid name, a regular file (no link followed) of
 * exactly bytes. Returns the descriptor, or -1 with e (ERR_INTERNAL, naming the blob). */
int blob_open(const char *dir, const char *name, size_t bytes, struct err *e);

/* Whether a digest computed over what was read is the name's. */
int blob_check(const char *name, struct sha256 *s);

/* Reads all of dir/name (checked as blob_open and blob_check do) into an owned buffer. */
unsigned char *blob_read(const char *dir, const char *name, size_t bytes, struct err *e);

#endif
