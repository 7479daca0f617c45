/* Modes: a bundle main opens under several modes and paths; it calls its helper. */
#include "fixture.h"

FIXTURE_INITIALIZER()
int modes_helper(int x);

int modes_entry(int x) { return modes_helper(x) * 3 + 1; }
