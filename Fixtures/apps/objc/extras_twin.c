/* Twin of extras.m. */
#include "twin.h"

static int dup_tag(const void *r) { (void)r; return 9; }
static int extras_cat_kind(const void *r) { (void)r; return 3; }
static int extras_sq_sides(const void *r) { (void)r; return 30; }

static const struct twin_method none[] = {{0, 0}};
static const struct twin_method dup_class_methods[] = {{"tag", dup_tag}, {0, 0}};
static const struct twin_method extras_cat_class_methods[] = {{"kind", extras_cat_kind}, {0, 0}};
static const struct twin_method extras_sq_class_methods[] = {{"sides", extras_sq_sides}, {0, 0}};

static const struct twin_class extras_Dup = {"Dup", &twin_Obj, dup_class_methods, none};
const struct twin_class *const twin_classes_extras[] = {&extras_Dup, 0};

static const struct twin_category extras_cat = {&twin_Shape, extras_cat_class_methods, none};
static const struct twin_category extras_sq = {&twin_Square, extras_sq_class_methods, none};
const struct twin_category *const twin_categories_extras[] = {&extras_cat, &extras_sq, 0};

static const struct twin_protocol extras_named = {"Named"};
const struct twin_protocol *const twin_protocols_extras[] = {&extras_named, 0};

int extras_dup_tag(void) { return twin_send_class(&extras_Dup, "tag"); }
const void *extras_dup_class(void) { return &extras_Dup; }
const char *extras_tag_selector(void) { return twin_sel("tag"); }
const void *extras_named_protocol(void) { return twin_protocol_ref(&extras_named); }

int extras_sides_sum(void) {
    return twin_send_class(&twin_Square, "sides") * 1000 + twin_send_class(&twin_Hexagon, "sides") * 10
        + twin_send_class(&twin_Shape, "kind");
}

__attribute__((constructor)) static void extras_init(void) {
    fixture_record_init(31); /* +[Dup load] */
    fixture_record_init(32); /* +[Shape(ExtrasCat) load] */
    fixture_record_init(FIXTURE_IMAGE_ID);
}
