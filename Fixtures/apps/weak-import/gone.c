/* libGone.dylib: linked with -weak_library, never shipped. */
int gone_value = 5;
int gone_fn(void) { return 6; }
