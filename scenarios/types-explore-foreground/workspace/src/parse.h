int parse(const char *s);
