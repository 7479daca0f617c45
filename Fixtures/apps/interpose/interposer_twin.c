/* The twin's libInterpose: the replacement is compute itself, the original is Lib's renamed one. */
#define REPLACEE compute_original
#define REPLACEMENT compute
#include "interposer.c"
int my_compute(int x) __attribute__((alias("compute")));
