/* libInsert: inserted at launch; interposes core_value for every other image, and calls the original itself. */
#include "fixture.h"

FIXTURE_INITIALIZER()

#ifndef REPLACEE
#define REPLACEE core_value
#define REPLACEMENT inserted_core_value
#endif

int REPLACEE(int x);
int REPLACEMENT(int x) { return REPLACEE(x) * 100 + 9; }

#ifdef __MACH__
__attribute__((used, section("__DATA,__interpose"))) static const void *interpose_core_value[2] = {
    (const void *)REPLACEMENT, (const void *)REPLACEE};
#endif
