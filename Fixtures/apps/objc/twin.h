/*
 * The plain-C twin of the objc fixture (built as the ELF twin, never as Mach-O): the
 * same classes, categories and +load methods as explicit tables, dispatched by name
 * (strings compare by content, so the twin needs no selector uniquing), with the
 * Objective-C rules written out where the runtime would apply them:
 *
 *  - lookup: a class's attached categories, latest attached first, then its own
 *    methods, then its superclass's (a class method of a root class falls back to the
 *    root class's instance methods; no fixture message needs that);
 *  - attach order: the runtime walks images in the reverse of dyld's load order
 *    (objc4 map_images_nolock: `while (i--)`), each image's categories in
 *    __objc_catlist order: main's categories are attached last, so they win;
 *  - objc_getClass: the first class registered under the name, registration in that
 *    same reverse load order;
 *  - selectors: one canonical pointer per name (sel_registerName of a name no image
 *    uses registers it, so a second call returns the same pointer): twin_sel interns;
 *  - protocols: per name the first one registered (the same reverse load order) is
 *    canonical, and every @protocol reference is rewritten to it (twin_protocol_ref);
 *  - +load: per image, in dyld's initializer order and before the image's own
 *    initializers: classes in __objc_nlclslist order, each superclass first, then
 *    categories in __objc_nlcatlist order (objc4 prepare_load_methods,
 *    call_load_methods). Each twin image's initializer calls them in that order.
 *
 * The load order (main, Shapes, Extras, Base) and the initializer order (Base, Shapes,
 * Extras, main) are the dyld model's (fixturebuild.py LoadModel); the harness runs
 * the initializers in that order.
 */
#include "fixture.h"

struct twin_method {
    const char *name;
    int (*imp)(const void *receiver);
};

struct twin_class {
    const char *name;
    const struct twin_class *superclass;
    const struct twin_method *class_methods;    /* ends with a null name */
    const struct twin_method *instance_methods; /* ends with a null name */
};

struct twin_category {
    const struct twin_class *cls;
    const struct twin_method *class_methods;
    const struct twin_method *instance_methods;
};

/* An instance: its class. */
struct twin_object {
    const struct twin_class *isa;
    int side;
};

/* Per image: classes in registration order, categories in __objc_catlist order (null-terminated). */
extern const struct twin_class *const twin_classes_base[], *const twin_classes_shapes[], *const twin_classes_extras[];
extern const struct twin_category *const twin_categories_shapes[], *const twin_categories_extras[], *const twin_categories_main[];

extern const struct twin_class twin_Obj, twin_Shape, twin_Square, twin_Triangle, twin_Poly, twin_Hexagon;

/* A protocol_t: its name. Per image with protocols, its __objc_protolist (null-terminated). */
struct twin_protocol {
    const char *name;
};
extern const struct twin_protocol *const twin_protocols_extras[];

/* In main's twin. */
const char *twin_sel(const char *name);
const void *twin_get_protocol(const char *name);
const void *twin_protocol_ref(const struct twin_protocol *protocol);
int twin_send_class(const struct twin_class *cls, const char *name);
int twin_send(const struct twin_object *object, const char *name);
int twin_send_super(const struct twin_class *current, const struct twin_object *object, const char *name);
const struct twin_class *twin_get_class(const char *name);

int shapes_dup_tag(void);
int shapes_area_sum(void);
int extras_dup_tag(void);
int extras_sides_sum(void);
const void *base_shape_class(void);
const char *base_area_selector(void);
const void *shapes_dup_class(void);
const char *shapes_kind_selector(void);
const void *extras_dup_class(void);
const char *extras_tag_selector(void);
const void *extras_named_protocol(void);
