/*
 * An LD_PRELOAD shim for tests/nocurl.sh: a machine without libcurl. dlopen of any libcurl
 * fails; everything else goes to the real dlopen.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

void *
dlopen(const char *file, int mode)
{
	void *(*real)(const char *, int) = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");

	if (file && strstr(file, "libcurl"))
		return NULL;
	return real(file, mode);
}
