/*
 * The classes of the objc fixture (Objective-C without Foundation: Obj is a root class).
 * Base: Obj, Shape : Obj. Shapes: Square, Triangle, Poly : Shape, Hexagon : Poly, Dup.
 * Extras: Dup (a second class of that name). Categories: Shape (ShapesCat) in Shapes,
 * Shape (ExtrasCat) and Square (ExtrasSq) in Extras, Square (MainCat) in main.
 */
#include "fixture.h"

/* The runtime's lookups by name (its hash tables: docs/objc.md). */
Class objc_getClass(const char *name);
SEL sel_registerName(const char *name);
SEL sel_getUid(const char *name);
const char *sel_getName(SEL sel);
const void *objc_getProtocol(const char *name);

/* A protocol both Extras and main reference: the runtime keeps one (Extras', registered first). */
@protocol Named
- (int)tag;
@end

__attribute__((objc_root_class))
@interface Obj {
    Class isa;
}
+ (int)value;
+ (int)kind;
+ (int)sides;
+ (int)tag;
- (int)area;
@end

@interface Shape : Obj
@end

@interface Square : Shape {
@public
    int side;
}
@end

@interface Triangle : Shape
@end

@interface Poly : Shape
@end

@interface Hexagon : Poly
@end

/* Functions that read each framework's own Dup and its instances. */
int shapes_dup_tag(void);
int shapes_area_sum(void);
int extras_dup_tag(void);
int extras_sides_sum(void);

/* What each framework references directly, for main to compare with the runtime's lookups. */
Class base_shape_class(void);
SEL base_area_selector(void);
Class shapes_dup_class(void);
SEL shapes_kind_selector(void);
Class extras_dup_class(void);
SEL extras_tag_selector(void);
const void *extras_named_protocol(void);
