/* Linked with -undefined dynamic_lookup: whoever loads it provides host_value and
   host_callback, found by flat-namespace lookup. */

extern int host_value;
extern int host_callback(int);

int *flat_value_pointer = &host_value;
int flat_call(int x) { return host_callback(x) + host_value; }
