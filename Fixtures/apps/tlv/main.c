/* tlv: main and four threads use Counter's thread-local variables and main's own. */
#include "tlv.h"

TLV_EXTERN(int, counter);
TLV_DEFINE(int, local_value, 7);
int counter_bump(int by);
int counter_read(void);

static int worker(int seed) {
    unsigned h = (unsigned)seed;
    for (int round = 0; round < 1000; round++) h = fixture_mix(h, (unsigned)counter_bump(seed));
    TLV(counter) += seed * 3;   /* Counter's variable, through main's __thread_ptrs bind */
    TLV(local_value) *= seed + 1;
    h = fixture_mix(h, (unsigned)counter_read());
    h = fixture_mix(h, (unsigned)TLV(local_value));
    return (int)h;
}

int main(void) {
    long threads[4];
    for (int i = 0; i < 4; i++) threads[i] = fixture_thread_start(worker, i + 1);
    unsigned h = (unsigned)worker(9);   /* the main thread's copies, set by Counter's initializer */
    for (int i = 0; i < 4; i++) h = fixture_mix(h, (unsigned)fixture_thread_join(threads[i]));
    h = fixture_mix(h, (unsigned)TLV(counter));
    return (int)fixture_mix_init_log(h);
}
