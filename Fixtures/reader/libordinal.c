/* Linked fifteen times, each dylib exporting one of these (-exported_symbol), so that
   plugin.bundle has more than fifteen dependencies. */

#define VALUE(n) int ordinal_value_##n = 1##n;
VALUE(01) VALUE(02) VALUE(03) VALUE(04) VALUE(05) VALUE(06) VALUE(07) VALUE(08)
VALUE(09) VALUE(10) VALUE(11) VALUE(12) VALUE(13) VALUE(14) VALUE(15)
