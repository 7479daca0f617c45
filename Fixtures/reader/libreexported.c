/* Re-exported whole by libfacade (LC_REEXPORT_DYLIB). */

int reexported_value = 7;
int reexported_function(int x) { return x + reexported_value; }
