/* Re-exports libreexported (linked last, with -reexport_library) and binds to libbase
   with addends that need DYLD_CHAINED_IMPORT_ADDEND. */

extern int reexported_value;
extern int base_array[64];

int facade_value = 3;
int *facade_back = base_array - 2;      /* addend -8 */
int *facade_far = base_array + 40000;   /* addend 160000: too big for an inline addend */
int facade_function(void) { return reexported_value + facade_value; }
