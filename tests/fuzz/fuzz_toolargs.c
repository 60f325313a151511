/* Tool argument parsing and schema checks of every tool of both profiles. */
#include <stdlib.h>
#include <string.h>

#include "agent/toolbox.h"
#include "tools/toolsets.h"

static struct toolbox sets[2];
static int ready;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *raw = malloc(size + 1);

	if (!ready) {
		toolbox_init(&sets[0]);
		toolsets_build(&sets[0], toolsets_profile("default", 0));
		toolbox_init(&sets[1]);
		toolsets_build(&sets[1], toolsets_profile("team", 0));
		ready = 1;
	}
	memcpy(raw, data, size);
	raw[size] = '\0';
	for (int s = 0; s < 2; s++) {
		for (size_t i = 0; i < sets[s].n; i++) {
			struct err e;
			err_clear(&e);
			json_t *args = toolbox_check_args(&sets[s], sets[s].tools[i], raw, &e);
			if (args == NULL && e.code != ERR_INVALID_ARGUMENT)
				__builtin_trap();	/* a refusal is always INVALID_ARGUMENT */
			json_decref(args);
		}
	}
	free(raw);
	return 0;
}
