/*
 * The persistent corpus index, <state-dir>/index.v1 (docs/contract.md §5.6): derived data, rebuildable from
 * the session files, so a missing, torn, corrupt or other-version file is only a slower start.
 *
 * Format (host byte order; the header's marker tells another order apart):
 *   header   "ACPIDX\r\n"  u32 version (3)  u32 marker 0x01020304  u64 count
 *   entries  count times: id[36] u8 state  i64 createdAt  i64 updatedAt  i32 depth  i64 size
 *            i64 mtime.sec  i64 mtime.nsec, then cwd parent origin title label mode agentType typeDescription model branch, each
 *            u32 length (0xffffffff: absent) and that many bytes (no NUL)
 *   trailer  u64 length of header+entries  u64 checksum of them  "ACPIEND\n"
 * It is written to a temporary file and renamed into place, so a reader sees a whole old index or a
 * whole new one; the trailer catches anything else (a torn copy, a flipped byte).
 */
#ifndef SESSION_INDEX_H
#define SESSION_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "session/entry.h"

#define SESS_INDEX_NAME "index.v1"
#define SESS_INDEX_VERSION 3	/* 2: a child's type, its description and model; 3: its branch */

enum sess_index_read {
	SESS_INDEX_OK,
	SESS_INDEX_ABSENT,		/* no file: a first start */
	SESS_INDEX_BAD,			/* unreadable, torn, corrupt or another version: e says which */
};

/* Writes v[0..n) (borrowed) to path atomically; 0, or -1 with e (path untouched). */
/* The trailer's checksum: FNV-1a over 64-bit words, then the tail bytes. */
uint64_t sess_index_sum(const unsigned char *p, size_t len);

int sess_index_write(const char *path, struct sess_entry *const *v, size_t n, struct err *e);
/*
 * Reads path; on SESS_INDEX_OK *out is an owned array of *n owned entries (ids checked, unique
 * not checked), else *out is NULL. Everything read is checked before it is used.
 */
enum sess_index_read sess_index_read(const char *path, struct sess_entry ***out, size_t *n, struct err *e);

#endif
