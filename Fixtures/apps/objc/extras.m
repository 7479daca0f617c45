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

int extras_dup_tag(void) { return [Dup tag]; }

int extras_sides_sum(void) { return [Square sides] * 1000 + [Hexagon sides] * 10 + [Shape kind]; }

FIXTURE_INITIALIZER()
