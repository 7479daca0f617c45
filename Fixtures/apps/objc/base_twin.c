/* Twin of base.m. */
#include "twin.h"

static int obj_value(const void *r) { (void)r; return 5; }
static int obj_kind(const void *r) { (void)r; return 100; }
static int obj_sides(const void *r) { (void)r; return -1; }
static int obj_tag(const void *r) { (void)r; return -2; }
static int obj_area(const void *r) { (void)r; return -3; }
static int shape_kind(const void *r) { (void)r; return 1; }
static int shape_sides(const void *r) { (void)r; return 0; }
static int shape_area(const void *r) { (void)r; return 1; }

static const struct twin_method obj_class_methods[] = {
    {"value", obj_value}, {"kind", obj_kind}, {"sides", obj_sides}, {"tag", obj_tag}, {0, 0}};
static const struct twin_method obj_instance_methods[] = {{"area", obj_area}, {0, 0}};
static const struct twin_method shape_class_methods[] = {{"kind", shape_kind}, {"sides", shape_sides}, {0, 0}};
static const struct twin_method shape_instance_methods[] = {{"area", shape_area}, {0, 0}};

const struct twin_class twin_Obj = {"Obj", 0, obj_class_methods, obj_instance_methods};
const struct twin_class twin_Shape = {"Shape", &twin_Obj, shape_class_methods, shape_instance_methods};

/* __objc_classlist order: Shape, Obj (source order). */
const struct twin_class *const twin_classes_base[] = {&twin_Shape, &twin_Obj, 0};

const void *base_shape_class(void) { return &twin_Shape; }
const char *base_area_selector(void) { return twin_sel("area"); }

/* +load: Shape is listed first, but its superclass Obj loads first. */
__attribute__((constructor)) static void base_init(void) {
    fixture_record_init(41); /* +[Obj load] */
    fixture_record_init(42); /* +[Shape load] */
    fixture_record_init(FIXTURE_IMAGE_ID);
}
