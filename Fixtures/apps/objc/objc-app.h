/*
 * The classes of the objc fixture (Objective-C without Foundation: Obj is a root class).
 * Base: Obj, Shape : Obj. Shapes: Square, Triangle, Poly : Shape, Hexagon : Poly, Dup.
 * Extras: Dup (a second class of that name). Categories: Shape (ShapesCat) in Shapes,
 * Shape (ExtrasCat) and Square (ExtrasSq) in Extras, Square (MainCat) in main.
 */
#include "fixture.h"

Class objc_getClass(const char *name);

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
