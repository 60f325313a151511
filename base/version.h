/* The product's version: one place, read by --version and initialize's agentInfo. */
#ifndef BASE_VERSION_H
#define BASE_VERSION_H

#define ACP_AGENT_VERSION "0.1.0"

#endif
