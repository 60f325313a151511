/* `acp-agent chat` (docs/contract.md §21): the terminal client's entry point. */
#ifndef CHAT_CHAT_H
#define CHAT_CHAT_H

/* argv[1] is "chat". Returns the exit status: 0 at Ctrl-D, 2 for bad usage. argv: borrowed. */
int chat_main(int argc, char **argv);

#endif
