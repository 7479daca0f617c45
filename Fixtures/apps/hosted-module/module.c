/*
 * Module: an extension module as Rust toolchains build them (MH_DYLIB, -undefined
 * dynamic_lookup): every host API symbol is a flat-namespace lookup, found only in the
 * host the module is loaded into. Its initializer registers with the host, as the
 * module's init function does when Python imports it.
 */
#include "fixture.h"

extern int host_api_value;
extern int host_api_call(int);
extern void host_register(unsigned);

int *module_api_ptr = &host_api_value;
int (*module_call_ptr)(int) = host_api_call;

unsigned module_value(void) {
    unsigned h = 41;
    h = fixture_mix(h, (unsigned)*module_api_ptr);
    h = fixture_mix(h, (unsigned)module_call_ptr(3));
    h = fixture_mix(h, (unsigned)host_api_call(8));
    return h;
}

__attribute__((constructor)) static void module_init(void) {
    fixture_record_init(FIXTURE_IMAGE_ID);
    host_register(module_value());
}
