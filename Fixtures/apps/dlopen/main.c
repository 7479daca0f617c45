/* dlopen: main loads a plugin at run time and calls into it through dlsym; the result says
 * what dlopen, dlerror, dlsym, dladdr and dlclose answered, which initializers ran, and that
 * the plugin shares the launch's Core. */
#include "fixture.h"

FIXTURE_INITIALIZER()
int core_counter(void);

static int same(const char *a, const char *b) {
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

#define PLUGIN "@executable_path/PlugIns/Plugin.bundle/Plugin"

int main(void) {
    unsigned h = 11;
    h = fixture_mix(h, (unsigned)core_counter());
    void *missing = dlopen("@executable_path/PlugIns/Missing.bundle/Missing", RTLD_NOW);
    h = fixture_mix(h, missing == 0);
    h = fixture_mix(h, dlerror() != 0);
    h = fixture_mix(h, dlerror() == 0); /* read once */
    void *plugin = dlopen(PLUGIN, RTLD_NOW);
    h = fixture_mix(h, plugin != 0);
    h = fixture_mix_init_log(h); /* the plugin's and its helper's initializers ran, in order */
    int (*entry)(int) = (int (*)(int))dlsym(plugin, "plugin_entry");
    h = fixture_mix(h, entry != 0);
    if (entry) h = fixture_mix(h, (unsigned)entry(5));
    h = fixture_mix(h, (unsigned)core_counter()); /* the plugin counted in the same Core */
    void *again = dlopen(PLUGIN, RTLD_NOW);
    h = fixture_mix(h, again == plugin);
    h = fixture_mix(h, (unsigned)fixture_init_count); /* no initializer ran twice */
    h = fixture_mix(h, dlsym(RTLD_DEFAULT, "plugin_entry") == (void *)entry);
    h = fixture_mix(h, dlsym(plugin, "no_such_symbol") == 0);
    h = fixture_mix(h, dlerror() != 0);
    Dl_info info;
    int found = dladdr((void *)entry, &info);
    h = fixture_mix(h, found != 0);
    if (found) {
        h = fixture_mix(h, info.dli_fbase == plugin);
        h = fixture_mix(h, info.dli_sname != 0 && same(info.dli_sname, "plugin_entry"));
        h = fixture_mix(h, info.dli_saddr == (void *)entry);
    }
    h = fixture_mix(h, dlclose(plugin) == 0);
    h = fixture_mix(h, dlclose(again) == 0);
    h = fixture_mix(h, dlclose(plugin) != 0); /* closed as often as opened */
    return (int)h;
}
