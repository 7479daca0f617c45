/* dlopen-modes: main opens one bundle under dlopen's modes and under each path form, and
 * folds every answer into the result, so that a mode acting as the default changes it:
 * RTLD_NOLOAD (a handle only for a loaded image, nothing loaded or run), RTLD_LOCAL (the
 * opened image hidden from RTLD_DEFAULT, its dependents not; a later dlopen without it
 * makes the image global), RTLD_FIRST (a handle of its own that searches the image alone,
 * where another searches its dependents too), dlopen(NULL) (RTLD_DEFAULT's search;
 * RTLD_MAIN_ONLY's with RTLD_FIRST), the same image under @executable_path, @rpath,
 * @loader_path and two spellings of an absolute path, and dlclose per open. */
#include "fixture.h"

FIXTURE_INITIALIZER()

#define MODES "@executable_path/PlugIns/Modes.bundle/Modes"
#define MODES_RPATH "@rpath/Modes.bundle/Modes"
#define MODES_LOADER "@loader_path/PlugIns/Modes.bundle/Modes"
#define HELPER "/usr/lib/libfixture_dlopen_modes.dylib"
#define HELPER_DOTS "/usr/lib/../lib/libfixture_dlopen_modes.dylib"

int main(void) {
    unsigned h = 13;
    /* RTLD_NOLOAD before anything loaded them: NULL and an error, nothing loaded or run. */
    h = fixture_mix(h, dlopen(MODES, RTLD_NOW | RTLD_NOLOAD) == 0);
    h = fixture_mix(h, dlerror() != 0);
    h = fixture_mix(h, dlopen(HELPER, RTLD_NOLOAD) == 0);
    h = fixture_mix(h, dlerror() != 0);
    h = fixture_mix(h, dlsym(RTLD_DEFAULT, "modes_helper") == 0);
    h = fixture_mix(h, dlerror() != 0);
    h = fixture_mix_init_log(h);

    /* RTLD_LOCAL: its handle finds the bundle's symbols and its helper's; RTLD_DEFAULT does
     * not see the bundle, but sees the helper (RTLD_LOCAL is the opened image's alone). */
    void *local = dlopen(MODES, RTLD_NOW | RTLD_LOCAL);
    h = fixture_mix(h, local != 0);
    h = fixture_mix_init_log(h);
    int (*entry)(int) = (int (*)(int))dlsym(local, "modes_entry");
    h = fixture_mix(h, entry != 0);
    if (entry) h = fixture_mix(h, (unsigned)entry(4));
    h = fixture_mix(h, dlsym(RTLD_DEFAULT, "modes_entry") == 0);
    h = fixture_mix(h, dlerror() != 0);
    void *helper_value = dlsym(RTLD_DEFAULT, "modes_helper");
    h = fixture_mix(h, helper_value != 0);
    h = fixture_mix(h, dlsym(local, "modes_helper") == helper_value);

    /* RTLD_FIRST under @rpath: the same image, a handle of its own that searches the image
     * alone; RTLD_LOCAL again keeps the image hidden. */
    void *first = dlopen(MODES_RPATH, RTLD_NOW | RTLD_LOCAL | RTLD_FIRST);
    h = fixture_mix(h, first != 0);
    h = fixture_mix(h, first != local);
    h = fixture_mix(h, dlsym(first, "modes_entry") == (void *)entry);
    h = fixture_mix(h, dlsym(first, "modes_helper") == 0);
    h = fixture_mix(h, dlerror() != 0);
    h = fixture_mix(h, dlsym(RTLD_DEFAULT, "modes_entry") == 0);
    h = fixture_mix(h, dlerror() != 0);

    /* RTLD_NOLOAD once loaded, under @loader_path: the first handle again, nothing run; without
     * RTLD_LOCAL it makes the image global. */
    void *again = dlopen(MODES_LOADER, RTLD_NOLOAD);
    h = fixture_mix(h, again == local);
    h = fixture_mix(h, dlsym(RTLD_DEFAULT, "modes_entry") == (void *)entry);

    /* The helper the bundle loaded, by its absolute path and by another spelling of it. */
    void *helper = dlopen(HELPER, RTLD_NOLOAD);
    h = fixture_mix(h, helper != 0 && helper != local);
    h = fixture_mix(h, dlopen(HELPER_DOTS, RTLD_NOW) == helper);
    h = fixture_mix(h, dlsym(helper, "modes_helper") == helper_value);
    h = fixture_mix(h, dlsym(helper, "modes_entry") == 0); /* not the image that loaded it */
    h = fixture_mix(h, dlerror() != 0);

    /* dlopen(NULL): RTLD_DEFAULT's search; with RTLD_FIRST the main executable's alone. */
    void *self = dlopen(0, RTLD_NOW);
    h = fixture_mix(h, self != 0);
    h = fixture_mix(h, dlsym(self, "modes_entry") == (void *)entry);
    void *main_only = dlopen(0, RTLD_NOW | RTLD_FIRST);
    h = fixture_mix(h, main_only != 0 && main_only != self);
    h = fixture_mix(h, dlsym(main_only, "modes_entry") == 0);
    h = fixture_mix(h, dlerror() != 0);
    h = fixture_mix_init_log(h); /* no initializer ran twice */

    /* dlclose: once per open, whichever handle; the handles of dlopen(NULL) always. */
    h = fixture_mix(h, dlclose(self) == 0);
    h = fixture_mix(h, dlclose(main_only) == 0);
    h = fixture_mix(h, dlclose(first) == 0);
    h = fixture_mix(h, dlclose(again) == 0);
    h = fixture_mix(h, dlclose(local) == 0);
    h = fixture_mix(h, dlclose(local) != 0);
    h = fixture_mix(h, dlerror() != 0);
    h = fixture_mix(h, dlclose(helper) == 0);
    h = fixture_mix(h, dlclose(helper) == 0);
    h = fixture_mix(h, dlclose(helper) != 0);
    h = fixture_mix(h, dlerror() != 0);
    return (int)h;
}
