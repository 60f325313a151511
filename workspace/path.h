/*
 * The workspace roots and confinement (docs/contract.md §16.2). A path the model gives is normalised
 * lexically ("a/../b" is "b"; a relative path is taken against the workspace root), then walked
 * one component at a time from a descriptor of its root with O_NOFOLLOW: the kernel never
 * follows a symlink for us. A symlink is read and its target walked the same way (physically:
 * ".." in a target is the real parent); a target that leaves both roots is refused. So a path
 * component swapped for a symlink between two calls, or during one, cannot lead a read or a
 * write outside: the next walk sees the link and judges it. Not covered: a directory of the
 * workspace renamed to outside it while a walk holds it open (a rename, not a symlink).
 *
 * Errors (struct err, <p> the path as the caller gave it):
 *   FS_OUTSIDE_WORKSPACE  path "<p>" is outside the workspace <root>
 *                         (also a write, or a directory created, under the read-only root)
 *   FS_NOT_FOUND          file "<p>" does not exist
 *   FS_IS_DIRECTORY       path "<p>" is a directory
 *   FS_IO                 cannot <read|write> "<p>": <strerror>   (EACCES, ENOSPC, ELOOP after
 *                         40 symlinks, a FIFO or device: "not a regular file", ...)
 */
#ifndef WORKSPACE_PATH_H
#define WORKSPACE_PATH_H

#include <stddef.h>

#include "base/err.h"

/*
 * Invariant: root is a realpath (exists, no symlink, no trailing '/' unless it is "/"). spill,
 * when set, is canonical as far as it exists (it may be created later); paths under it may be
 * read, never written. A path under both is read-only.
 */
struct ws_roots {
	char *root;		/* owned */
	char *spill;		/* owned, or NULL */
	char **extra;		/* owned: more read-write roots, realpaths (docs/contract.md §27) */
	size_t nextra;
};

/* Where a path resolved to. rel points into abs; abs is canonical as far as the path exists. */
struct ws_path {
	char *abs;		/* owned: absolute */
	const char *rel;	/* relative to the workspace root ("." for the root itself); abs when
				 * the path lies under the read-only root only */
	int read_only;		/* under the read-only root */
	int exists;		/* set by the calls that look (resolve, open_read, write) */
};

#define WS_WRITE_SYNC 1		/* fsync the file and its directory (the caller maps --sync) */

/* cwd, spill: borrowed (spill may be NULL). Fails (FS_IO) when cwd cannot be resolved. */
int ws_roots_init(struct ws_roots *r, const char *cwd, const char *spill, struct err *err);
void ws_roots_free(struct ws_roots *r);
/* Adds dir (absolute, borrowed) as another read-write root: 0, or -1 with FS_IO when it cannot be
 * resolved or is no directory. */
int ws_roots_add(struct ws_roots *r, const char *dir, struct err *err);

/*
 * Resolves path (borrowed) without opening or creating anything: FS_OUTSIDE_WORKSPACE, or 0
 * with *out filled (the caller frees it). for_write: a path under the read-only root is
 * refused. A missing tail is taken lexically.
 */
int ws_path_resolve(const struct ws_roots *r, const char *path, int for_write,
    struct ws_path *out, struct err *err);

/*
 * Opens a regular file for reading by the race-free walk: returns the descriptor (owned,
 * O_CLOEXEC) or -1. *out is filled on success and also after FS_NOT_FOUND and FS_IS_DIRECTORY
 * (so the caller can record an absent file); after any other error out->abs is NULL.
 */
int ws_path_open_read(const struct ws_roots *r, const char *path, struct ws_path *out,
    struct err *err);

/*
 * Replaces (or creates) the file at path with data[0..len) atomically: a temporary file in the
 * same directory (O_CREAT|O_EXCL|O_NOFOLLOW; the old file's mode, else 0666 less the umask),
 * written, fsynced under WS_WRITE_SYNC, renamed into place. A symlink inside the workspace is
 * followed (its target is replaced); missing parent directories are created (0777 less the
 * umask). Never a partial file: on failure the old file is untouched and the temporary file
 * removed. out: filled on success (exists: the file existed before), may be NULL. No content
 * checks here (ws_fs_write adds them).
 */
int ws_path_write(const struct ws_roots *r, const char *path, const char *data, size_t len,
    int flags, struct ws_path *out, struct err *err);

void ws_path_free(struct ws_path *p);	/* accepts a zeroed or freed path */

#endif
