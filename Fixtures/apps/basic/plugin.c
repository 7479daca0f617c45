/* Plugin.bundle: an MH_BUNDLE importing from Util; nothing loads it at launch. */
extern int util_table[16];
extern int util_scale(int x);

int *plugin_ptr = &util_table[2];

int plugin_entry(void) { return util_scale(10) + *plugin_ptr; }
