/* The default state directory (base/statedir.h). */
#include "base/statedir.h"

#include <stdlib.h>

#include "base/xmalloc.h"

char *
statedir_default(void)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	if (xdg && xdg[0] == '/')
		return xasprintf("%s/acp-agent", xdg);
	return xasprintf("%s/.local/state/acp-agent", home && *home ? home : "/tmp");
}
