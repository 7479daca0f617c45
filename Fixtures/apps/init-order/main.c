/* init-order: the result folds the whole init log and each library's view of it. */
#include "fixture.h"

extern int core_id(void), gfx_id(void), ui_id(void), net_id(void), log_id(void);
extern int core_seen_before, gfx_seen_before, ui_seen_before, net_seen_before, log_seen_before;

int *seen[5] = {&core_seen_before, &gfx_seen_before, &ui_seen_before, &net_seen_before, &log_seen_before};
int (*ids[5])(void) = {core_id, gfx_id, ui_id, net_id, log_id};

static int main_seen_before = -1;
FIXTURE_INITIALIZER()
__attribute__((constructor)) static void snapshot(void) { main_seen_before = fixture_init_count; }

int main(void) {
    unsigned h = fixture_mix_init_log(5);
    for (int i = 0; i < 5; i++) {
        h = fixture_mix(h, (unsigned)*seen[i]);
        h = fixture_mix(h, (unsigned)ids[i]());
    }
    h = fixture_mix(h, (unsigned)main_seen_before);
    return (int)h;
}
