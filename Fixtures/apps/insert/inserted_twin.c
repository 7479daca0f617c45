/* The twin's libInsert, preloaded: its replacement is core_value itself, first in the lookup scope. */
#define REPLACEE core_value_original
#define REPLACEMENT core_value
#include "inserted.c"
