#include "parse.h"
int parse(const char *s) { return s != 0; }
