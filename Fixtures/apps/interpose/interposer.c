/* libInterpose: replaces compute for every other image; its own bind to compute keeps the original. */
#include "fixture.h"

#ifndef REPLACEE
#define REPLACEE compute
#define REPLACEMENT my_compute
#endif

int REPLACEE(int x);
int REPLACEMENT(int x) { return REPLACEE(x) * 10 + 7; }

#ifdef __MACH__
/* dyld's DYLD_INTERPOSE: (replacement, replacee) pointer pairs in __DATA,__interpose. */
__attribute__((used, section("__DATA,__interpose"))) static const void *interpose_compute[2] = {
    (const void *)REPLACEMENT, (const void *)REPLACEE};
#endif
