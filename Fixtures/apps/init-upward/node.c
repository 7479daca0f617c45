/*
 * Every image but Core: an initializer that reads the board (what the initializers
 * before it wrote) and writes its slot, plus the symbols its upward and regular
 * dependents bind to (NODE_TAG names them); NODE_CALLS: the image it calls into
 * (NODE_CALLS_CHAIN: and through that image's own calls).
 */
#include "fixture.h"

extern void board_init(int id);

#define NAME2(a, b) a##_##b
#define NAME(a, b) NAME2(a, b)

int NAME(NODE_TAG, tag) = FIXTURE_IMAGE_ID * 11;
int NAME(NODE_TAG, fn)(int x) { return x * FIXTURE_IMAGE_ID + NAME(NODE_TAG, tag); }

#ifdef NODE_CALLS
extern int NAME(NODE_CALLS, fn)(int);
#ifdef NODE_CALLS_CHAIN
extern int NAME(NODE_CALLS, calls)(int);
int NAME(NODE_TAG, calls)(int x) { return NAME(NODE_CALLS, fn)(x) * 7 + NAME(NODE_CALLS, calls)(x + 1); }
#else
int NAME(NODE_TAG, calls)(int x) { return NAME(NODE_CALLS, fn)(x); }
#endif
#endif

__attribute__((constructor)) static void node_init(void) { board_init(FIXTURE_IMAGE_ID); }
