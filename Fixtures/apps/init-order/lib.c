/*
 * One source for the five libraries of init-order (selected by LIB_*). Each
 * initializer records its image id and snapshots how many images were
 * initialized before it; dependents read their dependencies' snapshots.
 */
#include "fixture.h"

#if defined(LIB_CORE)
#define PREFIX(x) core_##x
#elif defined(LIB_GFX)
#define PREFIX(x) gfx_##x
#elif defined(LIB_UI)
#define PREFIX(x) ui_##x
#elif defined(LIB_NET)
#define PREFIX(x) net_##x
#elif defined(LIB_LOG)
#define PREFIX(x) log_##x
#endif

int PREFIX(seen_before) = -1;

__attribute__((constructor)) static void initializer(void) {
    PREFIX(seen_before) = fixture_init_count;
    fixture_record_init(FIXTURE_IMAGE_ID);
}

int PREFIX(id)(void) { return FIXTURE_IMAGE_ID * 10 + PREFIX(seen_before); }
