/* Opt.framework: the shipped build lacks the "new API"; the link-time build has it. */
#include "fixture.h"

int opt_old_value = 1234;
int opt_old_fn(int x) { return x * 13 + 1; }

#ifdef OPT_HAS_NEW_API
int opt_new_value = 99;
int opt_new_array[4] = {1, 2, 3, 4};
int opt_new_fn(int x) { return x + 1000; }
#endif
