"""The Objective-C part of a `tools/gen-app --objc-classes N` app: its classes, categories
and message sends, their Objective-C sources, and what main's message sends return,
computed here from the runtime's rules (docs/objc.md), not by running anything.

Every framework gets N classes (a root class where it sees no other class, else
subclasses of its own earlier classes or of its dependencies' classes), M categories on
its dependencies' classes (its own when it has none), and K message sends, each with a
different selector name from one pool shared by the whole app (K selector references);
the main executable gets M categories and K sends of its own. Root classes answer every
selector; other classes and categories a few, each with its own constant. A send's
value is what lookup finds: the receiver's class and then its superclasses, for each the
attached categories latest attached first, then the class's own methods. Categories are
attached in the reverse of the load order, each image's in source order, so wrong
selector uniquing or a wrong attach order changes main's result.
"""

import random

MASK = 0xFFFFFFFF
MIN_SELECTORS = 4


def mix(h, v):
    return (h * 16777619 + v) & MASK


class ObjCClass:
    def __init__(self, name, owner, superclass):
        self.name = name
        self.owner = owner          # image name
        self.superclass = superclass  # ObjCClass or None (a root class)
        self.methods = {}           # selector index -> constant

    @property
    def is_root(self):
        return self.superclass is None


class ObjCCategory:
    def __init__(self, name, owner, target):
        self.name = name
        self.owner = owner
        self.target = target
        self.methods = {}


class ObjCImage:
    """One image's classes, categories and sends (receiver class, selector index)."""

    def __init__(self, name, prefix, index):
        self.name = name
        self.prefix = prefix
        self.index = index
        self.classes = []
        self.categories = []
        self.sends = []
        self.visible = []  # classes this image may name: its own and its direct dependencies'


class ObjCProgram:
    """The Objective-C part of one generated app. `program` is gen-app's Program."""

    def __init__(self, program, classes, categories, selrefs):
        self.program = program
        self.selectors = max(selrefs, MIN_SELECTORS)
        rng = random.Random("gen-app-objc:%d:%d:%d:%d:%d" % (program.count, program.seed, classes, categories, selrefs))
        self.images = {}
        for fw in program.fws:  # dependencies have lower indices: their classes exist
            image = ObjCImage(fw.name, fw.prefix, fw.index)
            dep_classes = [c for d in fw.deps for c in self.images[d.name].classes]
            for j in range(classes):
                candidates = image.classes + dep_classes
                superclass = rng.choice(candidates) if candidates else None
                cls = ObjCClass("%s_C%d" % (fw.name, j), fw.name, superclass)
                if cls.is_root:
                    cls.methods = {s: self.constant(fw.index, j, s) for s in range(self.selectors)}
                else:
                    for s in rng.sample(range(self.selectors), rng.randint(1, min(3, self.selectors))):
                        cls.methods[s] = self.constant(fw.index, j, s)
                image.classes.append(cls)
            image.visible = image.classes + dep_classes
            self.add_categories(image, dep_classes or image.classes, categories, rng)
            self.add_sends(image, selrefs, rng)
            self.images[fw.name] = image
        main = ObjCImage("gen%d" % program.count, "gen", 0)
        main.visible = [c for fw in program.main_links for c in self.images[fw.name].classes]
        self.add_categories(main, main.visible, categories, rng)
        self.add_sends(main, selrefs, rng)
        self.main = main

    def root_links(self, fw):
        """Frameworks `fw` must link besides its dependencies: the owners of its classes'
        root classes (a metaclass's isa names the root metaclass, as every class's names
        NSObject's, so each image links the root's image, as apps link libobjc)."""
        deps = {d.name for d in fw.deps} | {fw.name}
        owners = []
        for cls in self.images[fw.name].classes:
            root = cls
            while root.superclass is not None:
                root = root.superclass
            if root.owner not in deps and root.owner not in owners:
                owners.append(root.owner)
        return owners

    def constant(self, image_index, slot, selector):
        return (image_index * 1000003 + slot * 7919 + selector * 104729 + self.program.seed * 31) & 0x7FFFFFFF

    def add_categories(self, image, targets, count, rng):
        if not targets:
            return
        for k in range(count):
            category = ObjCCategory("%s_Cat%d" % (image.name, k), image.name, rng.choice(targets))
            for s in rng.sample(range(self.selectors), rng.randint(1, min(3, self.selectors))):
                category.methods[s] = self.constant(image.index, 1000 + k, s) ^ 0x40000000
            image.categories.append(category)

    def add_sends(self, image, count, rng):
        if not image.visible:
            return
        for s in rng.sample(range(self.selectors), count):
            image.sends.append((rng.choice(image.visible), s))

    # -- sources

    @staticmethod
    def objc_sum(prefix):
        return "%s_objc_sum" % prefix

    def interfaces(self, image):
        """@interface of every class the image names, superclasses first."""
        needed, order = set(), []
        for cls in image.visible + [c.target for c in image.categories]:
            chain = []
            while cls is not None and cls.name not in needed:
                needed.add(cls.name)
                chain.append(cls)
                cls = cls.superclass
            order.extend(reversed(chain))
        out = []
        for cls in order:
            if cls.is_root:
                out.append("__attribute__((objc_root_class))")
                out.append("@interface %s {\n    Class isa;\n}" % cls.name)
                out.extend("+ (unsigned)m%d;" % s for s in range(self.selectors))
                out.append("@end")
            else:
                out.append("@interface %s : %s\n@end" % (cls.name, cls.superclass.name))
        return out

    def source(self, image, deps):
        """The image's .m file: its classes, categories and `<prefix>_objc_sum`."""
        out = ["/* Generated by tools/gen-app (N=%d, seed=%d): Objective-C of %s. */" % (
            self.program.count, self.program.seed, image.name), '#include "fixture.h"',
            "/* Categories replace class methods on purpose. */",
            '#pragma clang diagnostic ignored "-Wobjc-protocol-method-implementation"', ""]
        out += self.interfaces(image)
        out.append("")
        for cls in image.classes:
            out.append("@implementation %s" % cls.name)
            out.extend("+ (unsigned)m%d { return %du; }" % (s, v) for s, v in sorted(cls.methods.items()))
            out.append("@end")
        for cat in image.categories:
            out.append("@implementation %s (%s)" % (cat.target.name, cat.name))
            out.extend("+ (unsigned)m%d { return %du; }" % (s, v) for s, v in sorted(cat.methods.items()))
            out.append("@end")
        out.append("")
        for d in deps:
            out.append("extern unsigned %s(void);" % self.objc_sum(d.prefix))
        out.append("static int computed;")
        out.append("static unsigned cached;")
        out.append("unsigned %s(void) {" % self.objc_sum(image.prefix))
        out.append("    if (computed) return cached;")
        out.append("    unsigned h = %du;" % image.index)
        for cls, s in image.sends:
            out.append("    h = fixture_mix(h, [%s m%d]);" % (cls.name, s))
        for d in deps:
            out.append("    h = fixture_mix(h, %s());" % self.objc_sum(d.prefix))
        out.append("    cached = h;")
        out.append("    computed = 1;")
        out.append("    return h;")
        out.append("}")
        return "\n".join(out) + "\n"

    def framework_source(self, fw):
        return self.source(self.images[fw.name], fw.deps)

    def main_source(self):
        return self.source(self.main, self.program.main_links)

    # -- expected values

    def attached(self, load_order_names):
        """Each class's categories, latest attached first: images in reverse load order,
        each image's categories in source order, each attach prepended."""
        attached = {}
        by_name = dict(self.images)
        by_name[self.main.name] = self.main
        for name in reversed(load_order_names):
            image = by_name.get(name)
            if image is None:
                continue
            for cat in image.categories:
                attached.setdefault(cat.target.name, []).insert(0, cat)
        return attached

    def main_value(self, load_order_names):
        """What `gen_objc_sum()` in main returns."""
        attached = self.attached(load_order_names)

        def send(cls, s):
            while cls is not None:
                for cat in attached.get(cls.name, []):
                    if s in cat.methods:
                        return cat.methods[s]
                if s in cls.methods:
                    return cls.methods[s]
                cls = cls.superclass
            raise AssertionError("no class answers m%d" % s)

        sums = {}

        def image_sum(image, deps):
            h = image.index
            for cls, s in image.sends:
                h = mix(h, send(cls, s))
            for d in deps:
                h = mix(h, sums[d.name])
            return h

        for fw in self.program.fws:
            sums[fw.name] = image_sum(self.images[fw.name], fw.deps)
        return image_sum(self.main, self.program.main_links)

    def counts(self):
        images = list(self.images.values()) + [self.main]
        return {"classes": sum(len(i.classes) for i in images), "categories": sum(len(i.categories) for i in images),
                "selectorReferences": sum(len({s for _, s in i.sends}) for i in images), "selectors": self.selectors}
