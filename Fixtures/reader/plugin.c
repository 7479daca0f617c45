/* A bundle loaded by app (-bundle_loader): binds to the main executable, to fifteen
   dylibs, and last to libSystem, whose library ordinal (16) does not fit an immediate. */

extern int app_service(int);
extern int *bind_zero;
#define DECLARE(n) extern int ordinal_value_##n;
DECLARE(01) DECLARE(02) DECLARE(03) DECLARE(04) DECLARE(05) DECLARE(06) DECLARE(07) DECLARE(08)
DECLARE(09) DECLARE(10) DECLARE(11) DECLARE(12) DECLARE(13) DECLARE(14) DECLARE(15)

int **plugin_app_pointer = &bind_zero;
int *plugin_ordinals[15] = {
    &ordinal_value_01, &ordinal_value_02, &ordinal_value_03, &ordinal_value_04,
    &ordinal_value_05, &ordinal_value_06, &ordinal_value_07, &ordinal_value_08,
    &ordinal_value_09, &ordinal_value_10, &ordinal_value_11, &ordinal_value_12,
    &ordinal_value_13, &ordinal_value_14, &ordinal_value_15,
};
int plugin_entry(int x) { return app_service(x) + **plugin_app_pointer + *plugin_ordinals[14]; }
