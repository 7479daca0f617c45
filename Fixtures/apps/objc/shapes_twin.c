/* Twin of shapes.m. */
#include "twin.h"

static int hexagon_sides(const void *r) { (void)r; return 6; }
static int square_sides(const void *r) { (void)r; return 4; }
static int square_area(const void *r) {
    const struct twin_object *self = r;
    return twin_send_super(&twin_Square, self, "area") + self->side * self->side;
}
static int poly_sides(const void *r) { (void)r; return 5; }
static int triangle_sides(const void *r) { (void)r; return 3; }
static int triangle_area(const void *r) { (void)r; return 6; }
static int dup_tag(const void *r) { (void)r; return 7; }
static int shapes_cat_kind(const void *r) { (void)r; return 2; }

static const struct twin_method none[] = {{0, 0}};
static const struct twin_method hexagon_class_methods[] = {{"sides", hexagon_sides}, {0, 0}};
static const struct twin_method square_class_methods[] = {{"sides", square_sides}, {0, 0}};
static const struct twin_method square_instance_methods[] = {{"area", square_area}, {0, 0}};
static const struct twin_method poly_class_methods[] = {{"sides", poly_sides}, {0, 0}};
static const struct twin_method triangle_class_methods[] = {{"sides", triangle_sides}, {0, 0}};
static const struct twin_method triangle_instance_methods[] = {{"area", triangle_area}, {0, 0}};
static const struct twin_method dup_class_methods[] = {{"tag", dup_tag}, {0, 0}};
static const struct twin_method shapes_cat_class_methods[] = {{"kind", shapes_cat_kind}, {0, 0}};

const struct twin_class twin_Hexagon = {"Hexagon", &twin_Poly, hexagon_class_methods, none};
const struct twin_class twin_Square = {"Square", &twin_Shape, square_class_methods, square_instance_methods};
const struct twin_class twin_Poly = {"Poly", &twin_Shape, poly_class_methods, none};
const struct twin_class twin_Triangle = {"Triangle", &twin_Shape, triangle_class_methods, triangle_instance_methods};
static const struct twin_class shapes_Dup = {"Dup", &twin_Obj, dup_class_methods, none};

const struct twin_class *const twin_classes_shapes[] = {&twin_Hexagon, &twin_Square, &twin_Poly, &twin_Triangle, &shapes_Dup, 0};

static const struct twin_category shapes_cat = {&twin_Shape, shapes_cat_class_methods, none};
const struct twin_category *const twin_categories_shapes[] = {&shapes_cat, 0};

static const struct twin_object square_instance = {&twin_Square, 3};
static const struct twin_object triangle_instance = {&twin_Triangle, 0};

int shapes_dup_tag(void) { return twin_send_class(&shapes_Dup, "tag"); }
const void *shapes_dup_class(void) { return &shapes_Dup; }
const char *shapes_kind_selector(void) { return twin_sel("kind"); }

int shapes_area_sum(void) {
    return twin_send(&square_instance, "area") * 100 + twin_send(&triangle_instance, "area");
}

/* +load: __objc_nlclslist is Hexagon, Square, Poly, Triangle; Hexagon's superclass Poly
 * loads before it (Shape loaded with Base); then the category. */
__attribute__((constructor)) static void shapes_init(void) {
    fixture_record_init(23); /* +[Poly load] */
    fixture_record_init(24); /* +[Hexagon load] */
    fixture_record_init(21); /* +[Square load] */
    fixture_record_init(22); /* +[Triangle load] */
    fixture_record_init(25); /* +[Shape(ShapesCat) load] */
    fixture_record_init(FIXTURE_IMAGE_ID);
}
