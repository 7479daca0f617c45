/*
 * Thread-local variables, written once for both builds: `__thread` under a Mach-O loader;
 * in the ELF twin, one slot per thread id (fixture.h), each starting from the initial
 * value, which is what a thread's first access to a fresh block gives.
 */
#include "fixture.h"

#if defined(__MACH__)
#define TLV_DEFINE(type, name, init) __thread type name = init
#define TLV_EXTERN(type, name) extern __thread type name
#define TLV(name) name
#else
#define TLV_DEFINE(type, name, init) type name##_slots[FIXTURE_TWIN_THREADS] = {[0 ... FIXTURE_TWIN_THREADS - 1] = init}
#define TLV_EXTERN(type, name) extern type name##_slots[FIXTURE_TWIN_THREADS]
#define TLV(name) name##_slots[fixture_twin_thread]
#endif
