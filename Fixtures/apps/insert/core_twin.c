/* The twin's Core: the original under its own name too, for libInsert's call through. */
#define core_value core_value_original
#include "core.c"
#undef core_value
int core_value(int x) __attribute__((alias("core_value_original")));
