/* insert: the result says whether libInsert was inserted (interposed core_value) and in which order initializers ran. */
#include "fixture.h"

FIXTURE_INITIALIZER()
int core_value(int x);
int other_value(int x);

int main(void) {
    unsigned h = 5;
    h = fixture_mix(h, (unsigned)core_value(2));
    h = fixture_mix(h, (unsigned)other_value(3));
    return (int)fixture_mix_init_log(h);
}
