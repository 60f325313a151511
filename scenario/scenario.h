/* acp-agent scenario: the keyless snapshot runner (docs/contract.md §10, §21), a subcommand of the binary. */
#ifndef SCENARIO_SCENARIO_H
#define SCENARIO_SCENARIO_H

/* `acp-agent scenario ...`: argv[0] is "scenario". Returns the exit code (0 all passed, 1 a
 * failure, 2 bad usage). Writes stdout and stderr; the agent it plays runs as a child. */
int scenario_main(int argc, char **argv);

#endif
