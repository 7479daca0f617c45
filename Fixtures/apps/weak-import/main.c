/* weak-import: missing weak imports must be bound to 0 (plus addend), present ones normally. */
#include "fixture.h"

extern int opt_old_value;
extern int opt_old_fn(int);
extern int opt_new_value FIXTURE_WEAK_IMPORT;
extern int opt_new_array[4] FIXTURE_WEAK_IMPORT;
extern int opt_new_fn(int) FIXTURE_WEAK_IMPORT;
extern int gone_value FIXTURE_WEAK_IMPORT;
extern int gone_fn(void) FIXTURE_WEAK_IMPORT;

int *present = &opt_old_value;
int (*present_fn)(int) = opt_old_fn;
int *missing_data = &opt_new_value;
int *missing_addend = &opt_new_array[2];
int (*missing_fn)(int) = opt_new_fn;
int *gone_data = &gone_value;
int (*gone_code)(void) = gone_fn;

int main(void) {
    unsigned h = 7;
    h = fixture_mix(h, (unsigned)*present);
    h = fixture_mix(h, (unsigned)present_fn(3));
    h = fixture_mix(h, (unsigned)opt_old_fn(4));
    /* Each pointer is mixed as "null or not", and read only when present. */
    h = fixture_mix(h, missing_data ? (unsigned)*missing_data : 501u);
    h = fixture_mix(h, (unsigned)((const char *)missing_addend - (const char *)0));
    h = fixture_mix(h, missing_fn ? (unsigned)missing_fn(1) : 502u);
    h = fixture_mix(h, &opt_new_value ? (unsigned)opt_new_value : 503u);
    h = fixture_mix(h, opt_new_fn ? (unsigned)opt_new_fn(2) : 504u);
    h = fixture_mix(h, gone_data ? (unsigned)*gone_data : 505u);
    h = fixture_mix(h, gone_code ? (unsigned)gone_code() : 506u);
    h = fixture_mix(h, &gone_value ? (unsigned)gone_value : 507u);
    h = fixture_mix(h, gone_fn ? (unsigned)gone_fn() : 508u);
    return (int)h;
}
