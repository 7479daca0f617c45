/* Extras: categories on Base's Shape (+kind) and on Shapes' Square (+sides), and a
 * second class named Dup. */
#include "objc-app.h"

@interface Dup : Obj
@end

@implementation Dup
+ (void)load { fixture_record_init(31); }
+ (int)tag { return 9; }
@end

@implementation Shape (ExtrasCat)
+ (void)load { fixture_record_init(32); }
+ (int)kind { return 3; }
@end

@implementation Square (ExtrasSq)
+ (int)sides { return 30; }
@end

extern struct fixture_objc_class_symbol dup_class __asm__("_OBJC_CLASS_$_Dup");

int extras_dup_tag(void) { return [Dup tag]; }
Class extras_dup_class(void) { return (Class)&dup_class; }
SEL extras_tag_selector(void) { return @selector(tag); }
const void *extras_named_protocol(void) { return (const void *)@protocol(Named); }

int extras_sides_sum(void) { return [Square sides] * 1000 + [Hexagon sides] * 10 + [Shape kind]; }

FIXTURE_INITIALIZER()
