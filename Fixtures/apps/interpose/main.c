/* interpose: main's calls and data pointer to compute reach libInterpose's replacement. */
#include "fixture.h"

int compute(int x);
int my_compute(int x);
int util_value(int x);
int lib_calls_compute(int x);

int (*compute_pointer)(int) = compute;

int main(void) {
    unsigned h = 11;
    h = fixture_mix(h, (unsigned)compute(3));           /* interposed: (3*2+1)*10+7 = 77 */
    h = fixture_mix(h, (unsigned)util_value(4));        /* interposed in Util: 97 + 100 = 197 */
    h = fixture_mix(h, (unsigned)lib_calls_compute(5)); /* direct inside Lib: 11 + 1000 = 1011 */
    h = fixture_mix(h, (unsigned)compute_pointer(6));   /* the data bind, interposed: 137 */
    h = fixture_mix(h, compute_pointer == my_compute ? 1u : 2u);
    return (int)h;
}
