/*
 * Replacing a file whole: all of the new bytes or none of them. The one writer of the index file,
 * a recording's files and the workspace's writes.
 */
#ifndef BASE_ATOMIC_H
#define BASE_ATOMIC_H

#include <stddef.h>
#include <sys/types.h>

#define ATOMIC_SYNC 1		/* fsync the file before it is renamed, and its directory after */
#define ATOMIC_MODE 2		/* give the file exactly mode (fchmod: the umask does not apply) */

/*
 * Writes data as dirfd/name: a new file with a name no one else uses (".acp-write-<pid>-<hex>",
 * O_EXCL) beside it, written, renamed over name. Returns 0; 1 when the file is in place but the
 * directory could not be synced (ATOMIC_SYNC); -1 with errno (the temporary file removed, name
 * untouched).
 */
int atomic_writeat(int dirfd, const char *name, const void *data, size_t len, mode_t mode, int flags);
/* The same for a path (its directory is opened, then closed). */
int atomic_write(const char *path, const void *data, size_t len, mode_t mode, int flags);

#endif
