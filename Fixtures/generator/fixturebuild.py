"""Builds fixture apps described by a manifest.json (schema: docs/fixtures.md).

Used by tools/build-fixtures (the hand-written apps under Fixtures/apps) and by
tools/gen-app (generated apps). Standard library only.

Three outputs per app:
  * Mach-O bundles (x86_64 or arm64, chained or opcode fixups) linked by ld64.lld,
  * the x86_64 Linux ELF twin of the same sources (ld.lld), run natively to
    re-derive the expected result,
  * a first-principles model of dyld's loading (path resolution, load order,
    initializer order) used to check the manifest's expectations.
"""

import concurrent.futures
import hashlib
import json
import os
import shutil
import struct
import subprocess

REPO = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
LIBSYSTEM_DIR = os.path.join(REPO, "Fixtures", "libSystem")
LIBSYSTEM_INSTALL_NAME = "/usr/lib/libSystem.B.dylib"
# Our Objective-C runtime (Fixtures/libSystem/objc), linked by every image with .m sources.
LIBOBJC_INSTALL_NAME = "/usr/lib/libobjc.A.dylib"
LIBOBJC_SOURCES = {"x86_64": ["runtime.c", "msgSend-x86_64.s"], "arm64": ["runtime.c"]}

CLANG = os.environ.get("FIXTURE_CLANG", "/opt/swift/usr/bin/clang")
LD64 = "/usr/lib/llvm-19/bin/ld64.lld"
LDELF = "/usr/lib/llvm-19/bin/ld.lld"
OBJCOPY = "/usr/lib/llvm-19/bin/llvm-objcopy"
NM = "/usr/lib/llvm-19/bin/llvm-nm"
ELF_INTERPRETER = "/lib64/ld-linux-x86-64.so.2"

ARCHS = ("x86_64", "arm64")
STYLES = ("chained", "opcodes")
MACHO_TARGET = {"x86_64": "x86_64-apple-macos11", "arm64": "arm64-apple-ios14"}
MACHO_PLATFORM = {"x86_64": ["macos", "11.0", "11.0"], "arm64": ["ios", "14.0", "14.0"]}
STYLE_FLAG = {"chained": "-fixup_chains", "opcodes": "-no_fixup_chains"}
# Every image carries an ad-hoc code signature, as ld64 writes for arm64 and `codesign -s -`
# for x86_64 (lld signs only arm64 macOS by default, so the flag is explicit).
SIGN_FLAG = {"x86_64": ["-adhoc_codesign"], "arm64": ["-adhoc_codesign"]}
ELF = "elf"  # the pseudo-architecture of the ELF twin

CFLAGS = ["-ffreestanding", "-fno-stack-protector", "-fno-builtin", "-O1", "-fvisibility=default"]

LINK_KINDS = ("regular", "weak", "reexport", "upward")
IMAGE_KINDS = ("executable", "framework", "dylib", "bundle")

LC_LOAD_DYLIB = 0xC
LC_LOAD_UPWARD_DYLIB = 0x80000023
LC_CODE_SIGNATURE = 0x1D
MH_WEAK_DEFINES = 0x8000


class FixtureError(Exception):
    """A manifest that cannot be built, a failing command, or a failed check."""


# ---------------------------------------------------------------------------
# Manifest


class Copy:
    """One shipped build of an image: a bundle-relative or absolute path and its defines."""

    def __init__(self, path, defines):
        self.path = path
        self.defines = tuple(defines)


class Link:
    def __init__(self, image, kind):
        self.image = image
        self.kind = kind


class Image:
    def __init__(self, app, index, raw):
        where = "%s: images[%d]" % (app.name, index)
        unknown = set(raw) - {
            "name", "kind", "path", "installName", "sources", "defines", "linkDefines",
            "copies", "links", "rpaths", "flatNamespace", "undefinedDynamicLookup", "ship", "twinSources",
        }
        if unknown:
            raise FixtureError("%s: unknown keys %s" % (where, sorted(unknown)))
        self.id = index + 1
        self.name = raw["name"]
        self.kind = raw.get("kind", "dylib")
        if self.kind not in IMAGE_KINDS:
            raise FixtureError("%s: bad kind %r" % (where, self.kind))
        if (self.kind == "executable") != (index == 0):
            raise FixtureError("%s: the executable must be the first image, and only it" % where)
        self.path = app.name if self.kind == "executable" else raw["path"]
        self.install_name = raw.get("installName")
        if self.kind in ("framework", "dylib") and not self.install_name:
            raise FixtureError("%s: a %s needs an installName" % (where, self.kind))
        self.sources = list(raw["sources"])
        # The ELF twin's own sources (an Objective-C image's plain-C twin); default: the same sources.
        self.twin_sources = list(raw.get("twinSources", self.sources))
        if any(s.endswith(".m") for s in self.twin_sources):
            raise FixtureError("%s: the ELF twin cannot build Objective-C; give twinSources in C" % where)
        self.defines = tuple(raw.get("defines", []))
        self.link_defines = tuple(raw["linkDefines"]) if "linkDefines" in raw else None
        self.copies = [Copy(self.path, self.defines)] + [
            Copy(c["path"], c.get("defines", self.defines)) for c in raw.get("copies", [])
        ]
        self.links = []
        for entry in raw.get("links", []):
            if isinstance(entry, str):
                entry = {"image": entry}
            kind = entry.get("kind", "regular")
            if kind not in LINK_KINDS:
                raise FixtureError("%s: bad link kind %r" % (where, kind))
            self.links.append(Link(entry["image"], kind))
        kinds = [l.kind for l in self.links]
        if "reexport" in kinds and any(k != "reexport" for k in kinds[kinds.index("reexport"):]):
            raise FixtureError("%s: re-exported dylibs must be listed last (lld 19 ordinal quirk)" % where)
        self.rpaths = list(raw.get("rpaths", []))
        if self.kind == "executable":
            self.rpaths = ["@executable_path/Frameworks"] + self.rpaths
        self.flat_namespace = bool(raw.get("flatNamespace", False))
        self.dynamic_lookup = bool(raw.get("undefinedDynamicLookup", False))
        self.ship = bool(raw.get("ship", True))

    @property
    def uses_objc(self):
        """Whether the Mach-O image links our libobjc.A.dylib (it has Objective-C sources)."""
        return any(s.endswith(".m") for s in self.sources)

    @property
    def has_link_stub(self):
        return self.link_defines is not None


class App:
    def __init__(self, name, source_dir, raw):
        self.name = name
        self.source_dir = source_dir
        self.raw = raw
        self.images = []
        for i, img in enumerate(raw["images"]):
            self.images.append(Image(self, i, img))
        self.by_name = {img.name: img for img in self.images}
        if len(self.by_name) != len(self.images):
            raise FixtureError("%s: duplicate image names" % name)
        for img in self.images:
            for link in img.links:
                if link.image not in self.by_name:
                    raise FixtureError("%s: %s links unknown image %s" % (name, img.name, link.image))
                if self.by_name[link.image].kind in ("executable", "bundle"):
                    raise FixtureError("%s: %s links %s, which is not a dylib" % (name, img.name, link.image))
        self.expect = raw.get("expect", {})
        # Libraries inserted at launch (DYLD_INSERT_LIBRARIES, `dyld3 launch --insert`), and
        # what that launch must give; "expect" is the launch without them.
        self.inserted = list(raw.get("insert", []))
        self.expect_inserted = raw.get("expectInserted")
        for name in self.inserted:
            if name not in self.by_name or self.by_name[name].kind != "dylib":
                raise FixtureError("%s: inserted image %s must be a dylib of the app" % (self.name, name))
        if bool(self.inserted) != (self.expect_inserted is not None):
            raise FixtureError("%s: \"insert\" and \"expectInserted\" go together" % self.name)
        # An image main loads at run time (dlopen): its path as main passes it, the symbols
        # main looks up in it, and the initializers that dlopen runs, in order.
        self.dlopen = raw.get("dlopen")
        if self.dlopen is not None:
            target = self.by_name.get(self.dlopen.get("image"))
            if target is None or target.kind not in ("bundle", "dylib"):
                raise FixtureError("%s: \"dlopen\" must name a bundle or dylib of the app" % self.name)
            if not self.dlopen.get("path", "").startswith("@executable_path/") or not self.dlopen.get("symbols"):
                raise FixtureError("%s: \"dlopen\" needs an @executable_path path and its symbols" % self.name)
            # Other paths main passes for the same image ("aliases"), and dependents the dlopen
            # loads that main opens or searches too ("dependents": image, paths, symbols).
            for dependent in self.dlopen.setdefault("dependents", []):
                if dependent.get("image") not in self.by_name or not dependent.get("paths"):
                    raise FixtureError("%s: a \"dlopen\" dependent needs an image of the app and its paths" % self.name)

    @property
    def executable(self):
        return self.images[0]


def load_app(source_dir):
    with open(os.path.join(source_dir, "manifest.json")) as f:
        raw = json.load(f)
    return App(os.path.basename(os.path.normpath(source_dir)), source_dir, raw)


# ---------------------------------------------------------------------------
# Jobs: commands (or Python steps) with dependencies, run on a few workers.


class Job:
    def __init__(self, name, deps, argv=None, action=None, cwd=None):
        self.name = name
        self.deps = [d for d in deps if d is not None]
        self.argv = argv
        self.action = action
        self.cwd = cwd


class JobGraph:
    def __init__(self):
        self.jobs = {}

    def add(self, name, deps=(), argv=None, action=None, cwd=None):
        if name not in self.jobs:
            self.jobs[name] = Job(name, list(deps), argv, action, cwd)
        return name

    def run(self, workers):
        pending = dict(self.jobs)
        done = set()
        running = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            while pending or running:
                ready = [j for j in pending.values() if all(d in done for d in j.deps)]
                ready.sort(key=lambda j: j.name)
                for job in ready:
                    del pending[job.name]
                    running[pool.submit(_run_job, job)] = job
                if not running:
                    missing = sorted({d for j in pending.values() for d in j.deps if d not in self.jobs})
                    raise FixtureError("job graph stuck; unknown dependencies: %s" % missing)
                finished, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
                for fut in finished:
                    job = running.pop(fut)
                    fut.result()
                    done.add(job.name)


def _run_job(job):
    if job.argv is not None:
        run(job.argv, cwd=job.cwd)
    if job.action is not None:
        job.action()


def run(argv, cwd=None):
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0 or proc.stdout.strip():
        raise FixtureError("command %s:\n  %s\n%s" % (
            "failed" if proc.returncode else "printed output",
            " ".join(_quote(a) for a in argv), proc.stdout.rstrip()))


def _quote(arg):
    return arg if arg and all(c.isalnum() or c in "-_./=@,:+" for c in arg) else "'%s'" % arg.replace("'", "'\\''")


def ensure_dir(path):
    os.makedirs(path, exist_ok=True)


# ---------------------------------------------------------------------------
# Layout


class Layout:
    """Where one architecture × style build of some apps goes.

    dest/<app>.app/...      the bundle (main executable, Frameworks/, ...)
    dest/root/usr/lib/...   the system root: libSystem.B.dylib and absolute-path dylibs
    obj/<arch>/...          objects (shared by both styles of an architecture)
    obj/<arch>-<style>/...  link-only dylibs (link stubs, provisional builds)
    """

    def __init__(self, dest, obj, arch, style):
        self.dest = dest
        self.obj = obj
        self.arch = arch
        self.style = style

    @property
    def root(self):
        return os.path.join(self.dest, "root")

    @property
    def bundle_key(self):
        return self.arch if self.arch == ELF else "%s-%s" % (self.arch, self.style)

    def bundle(self, app):
        return os.path.join(self.dest, app.name + ".app")

    def shipped_file(self, app, path):
        if path.startswith("/"):
            return os.path.join(self.root, path.lstrip("/"))
        return os.path.join(self.bundle(app), path)

    def libsystem(self):
        return os.path.join(self.root, LIBSYSTEM_INSTALL_NAME.lstrip("/"))

    def libobjc(self):
        return os.path.join(self.root, LIBOBJC_INSTALL_NAME.lstrip("/"))

    def objects_dir(self, app, image, variant):
        return os.path.join(self.obj, self.arch, app.name, "%s.%s" % (image.name, variant))

    def private_file(self, app, image, what):
        # Keeps the bundle-relative shape (X.framework/X) so ld64.lld's -F/-L search finds it.
        return os.path.join(self.obj, self.bundle_key, app.name, what, image.path.lstrip("/"))


def variant_key(defines):
    if not defines:
        return "plain"
    return hashlib.sha1("\0".join(defines).encode()).hexdigest()[:10]


def compile_flags(arch):
    if arch == ELF:
        target = ["-target", "x86_64-linux-gnu", "-fPIC"]
    else:
        target = ["-target", MACHO_TARGET[arch]]
    return [CLANG] + target + CFLAGS + [
        "-ffile-prefix-map=%s=." % REPO,
        "-I", os.path.join(LIBSYSTEM_DIR, "include"),
    ]


# ---------------------------------------------------------------------------
# Planning the build of one app for one layout.


class AppBuild:
    """Adds the compile and link jobs of one app (one arch × style) to a JobGraph."""

    def __init__(self, graph, layout, app, libsystem_job):
        self.graph = graph
        self.layout = layout
        self.app = app
        self.libsystem_job = libsystem_job
        self.link_target = {}   # image name -> (job, file) dependents link against
        self.in_progress = set()
        self.resolution = None
        self.load_order = None
        self.init_order = None
        if layout.arch == ELF:
            model = LoadModel(app, lambda path: path in self.shipped_paths())
            self.resolution = model.resolve_all()
            try:
                self.load_order = model.load()[0]
                # The harness's list holds the inserted libraries too, in the inserted
                # launch's order: a run without them skips their (weak, absent) entries.
                self.init_order = LoadModel(app, lambda path: path in self.shipped_paths(), inserted=True).init_order()
            except LoadError:
                pass

    # -- objects

    def objects(self, image, defines):
        arch = self.layout.arch
        variant = variant_key(defines)
        outdir = self.layout.objects_dir(self.app, image, variant)
        jobs, files = [], []
        for src in (image.twin_sources if arch == ELF else image.sources):
            src_path = os.path.join(self.app.source_dir, src)
            obj = os.path.join(outdir, os.path.splitext(src)[0] + ".o")
            argv = compile_flags(arch) + ["-DFIXTURE_IMAGE_ID=%d" % image.id]
            argv += ["-D" + d for d in defines]
            argv += ["-c", src_path, "-o", obj]
            ensure_dir(os.path.dirname(obj))
            action = None
            if arch == ELF:
                # The twin's harness runs initializers in dyld's order (see elf/twin_init.c).
                action = lambda obj=obj: run([OBJCOPY, "--rename-section", ".init_array=fixture_init", obj])
            jobs.append(self.graph.add("cc:%s" % obj, argv=argv, action=action))
            files.append(obj)
        if arch == ELF:
            obj = os.path.join(outdir, "twin_init.o")
            jobs.append(self.graph.add("cc:%s" % obj, argv=compile_flags(ELF) + [
                "-DFIXTURE_IMAGE_ID=%d" % image.id, "-c", os.path.join(LIBSYSTEM_DIR, "elf", "twin_init.c"), "-o", obj]))
            files.append(obj)
        return jobs, files

    # -- linking

    def shipped_paths(self):
        return {c.path for img in self.app.images if img.ship for c in img.copies}

    def build(self):
        for image in self.app.images:
            self.ensure(image)
        for image in self.app.images:
            if not image.ship:
                continue
            for i, copy in enumerate(image.copies):
                if i == 0 and not image.has_link_stub:
                    continue  # the primary copy is already built: it is the link target
                self.link(image, copy.defines, self.layout.shipped_file(self.app, copy.path), provisional=False)

    def ensure(self, image):
        """Makes sure `image` has a link target, building its dependencies first.

        Dependents link against the shipped primary copy, or against a private build
        when the image has linkDefines or is not shipped. In a cycle, the image first
        reached again gets a provisional build (no dependencies, undefined symbols
        left to dynamic lookup) for the images inside the cycle to link against.
        """
        if image.name in self.in_progress:
            if image.name not in self.link_target:
                out = self.layout.private_file(self.app, image, "provisional")
                job = self.link(image, image.link_defines or image.defines, out, provisional=True)
                self.link_target[image.name] = (job, out)
            return
        if image.name in self.link_target:
            return
        self.in_progress.add(image.name)
        for link in image.links:
            self.ensure(self.app.by_name[link.image])
        self.in_progress.discard(image.name)
        if image.has_link_stub or not image.ship:
            out = self.layout.private_file(self.app, image, "linkstub")
        else:
            out = self.layout.shipped_file(self.app, image.path)
        job = self.link(image, image.link_defines or image.defines, out, provisional=False)
        self.link_target[image.name] = (job, out)

    def link(self, image, defines, out, provisional):
        obj_jobs, obj_files = self.objects(image, defines)
        deps = list(obj_jobs) + [self.libsystem_job]
        dep_files = []
        if not provisional:
            for link in image.links:
                job, file = self.link_target[link.image]
                deps.append(job)
                dep_files.append((link, file))
        ensure_dir(os.path.dirname(out))
        if self.layout.arch == ELF:
            argv, extra_deps = self.elf_link_argv(image, obj_files, dep_files, out, provisional)
            deps += extra_deps + [self.coalescing_job()]
            action = None
        else:
            argv = self.macho_link_argv(image, obj_files, dep_files, out, provisional)
            action = self.upward_patch_action(image, out) if not provisional else None
        return self.graph.add("ld:%s" % out, deps, argv=argv, action=action, cwd=os.path.dirname(out))

    def macho_link_argv(self, image, obj_files, dep_files, out, provisional):
        arch = self.layout.arch
        argv = [LD64, "-arch", arch, "-platform_version"] + MACHO_PLATFORM[arch] + [STYLE_FLAG[self.layout.style]]
        argv += SIGN_FLAG[arch]
        if image.kind == "executable":
            argv += ["-execute", "-e", "_main"]
        elif image.kind == "bundle":
            argv += ["-bundle"]
        else:
            argv += ["-dylib", "-install_name", image.install_name]
        for rpath in image.rpaths:
            argv += ["-rpath", rpath]
        if image.flat_namespace:
            argv += ["-flat_namespace"]
        if image.dynamic_lookup or provisional:
            argv += ["-undefined", "dynamic_lookup"]
        argv += [os.path.relpath(f, os.path.dirname(out)) for f in obj_files]
        argv += self.search_paths(image) if not provisional else []
        argv += [self.layout.libsystem()]
        if image.uses_objc:
            argv += [self.layout.libobjc()]
        for link, file in dep_files:
            flag = {"regular": [], "upward": [], "weak": ["-weak_library"], "reexport": ["-reexport_library"]}[link.kind]
            argv += flag + [file]
        argv += ["-o", os.path.basename(out)]
        return argv

    def search_paths(self, image):
        """-F/-L options that let ld64.lld find the dylibs behind re-exports (and, for
        -flat_namespace, behind every load command) by their install names' basenames."""
        seen, dirs = set(), []

        def walk(img):
            for link in img.links:
                if link.image in seen or link.image not in self.link_target:
                    continue  # (an image whose own link is under way, inside a cycle)
                seen.add(link.image)
                target = self.app.by_name[link.image]
                file = self.link_target[link.image][1]
                if target.install_name.endswith(".framework/" + os.path.basename(file)):
                    dirs.append("-F" + os.path.dirname(os.path.dirname(file)))
                else:
                    dirs.append("-L" + os.path.dirname(file))
                walk(target)

        walk(image)
        if image.flat_namespace:
            dirs.append("-L" + os.path.dirname(self.layout.libsystem()))
        return list(dict.fromkeys(dirs))

    def upward_patch_action(self, image, out):
        names = [self.app.by_name[l.image].install_name for l in image.links if l.kind == "upward"]
        if not names:
            return None
        return lambda: make_upward(out, names)

    def elf_link_argv(self, image, obj_files, dep_files, out, provisional):
        """The twin's link: DT_NEEDED and DT_RUNPATH stand for the Mach-O load commands.

        Each dependency is found through a runpath entry naming the directory where the
        dyld model resolves it. The executable also needs every other image dyld loads,
        appended in dyld's load order, so that the twin's global lookup scope (flat
        lookups, weak coalescing) has dyld's order. Non-weak definitions bind locally
        (-Bsymbolic-non-weak), as two-level namespace images do.
        """
        argv = [LDELF, "-z", "now", "--hash-style=gnu", "--build-id=none"]
        extra_deps = []
        if image.kind == "executable":
            harness, harness_job = self.harness()
            extra_deps.append(harness_job)
            argv += ["-pie", "-E", "--dynamic-linker", ELF_INTERPRETER, harness]
        else:
            argv += ["-shared", "-soname", os.path.basename(image.path), "--Bsymbolic-non-weak"]
        argv += obj_files + [self.layout.libsystem()]
        runpath = [os.path.dirname(self.layout.libsystem())]
        shipped = self.shipped_paths()
        for link, file in dep_files:
            target = self.app.by_name[link.image]
            if link.kind == "weak" and not any(c.path in shipped for c in target.copies if target.ship):
                continue  # a missing weak dylib: its symbols stay weak undefined (read as 0)
            argv.append(file)
            resolved = self.resolution.get((image.name, link.image))
            if resolved:
                runpath.append(os.path.dirname(self.layout.shipped_file(self.app, resolved)))
            if link.kind == "reexport" or any(l.kind == "reexport" for l in target.links):
                # ELF has no re-exports: let the linker see the re-exported symbols without a DT_NEEDED.
                argv += ["--as-needed"] + self.reexport_closure(target) + ["--no-as-needed"]
        if image.kind == "executable" and self.load_order:
            direct = {self.resolution.get((image.name, l.image)) for l in image.links}
            opened = []
            if self.app.dlopen is not None:
                # What dlopen adds comes last in the lookup scope, as it loads last.
                opened = LoadModel(self.app, lambda path: path in self.shipped_paths()).dlopen_load()
            for _, path in self.load_order[1:] + opened:
                if path not in direct:
                    file = self.layout.shipped_file(self.app, path)
                    argv.append(file)
                    extra_deps.append("ld:%s" % file)
                    runpath.append(os.path.dirname(file))
        argv += ["-rpath", ":".join(dict.fromkeys(runpath))]
        argv += ["--version-script=" + self.export_map(image)]
        argv += ["-o", out]
        return argv, extra_deps

    # -- weak coalescing in the twin

    def export_map(self, image):
        return os.path.join(self.layout.obj, ELF, self.app.name, "exports", "%d.map" % image.id)

    def coalescing_job(self):
        """One job per app: reads every image's ELF objects (llvm-nm), runs the coalescing
        model and writes each image's version script. An image that would carry no
        MH_WEAK_DEFINES keeps the names that are weakly defined elsewhere out of its
        dynamic symbol table: dyld's coalescing never looks at it, and with them hidden
        neither does ld.so's global lookup (LD_DYNAMIC_WEAK=1 then makes a non-weak
        definition win over earlier weak ones, as dyld does among the images that take part)."""
        deps, files = [], {}
        for img in self.app.images:
            jobs, objs = self.objects(img, img.defines)
            deps += jobs
            files[img.name] = objs

        def write_maps():
            model = CoalescingModel(self.app, read_definitions(files), self.load_order)
            with open(coalescing_file(self.layout, self.app), "w") as f:
                json.dump(model.summary(), f, indent=1, sort_keys=True)
            for img in self.app.images:
                hidden = sorted(n[1:] for n in model.hidden_names(img.name))
                text = "{\n  global: *;\n" + ("  local:\n" + "".join("    %s;\n" % n for n in hidden) if hidden else "") + "};\n"
                path = self.export_map(img)
                ensure_dir(os.path.dirname(path))
                with open(path, "w") as f:
                    f.write(text)

        return self.graph.add("coalescing:%s" % self.layout.bundle(self.app), deps, action=write_maps)

    def harness(self):
        if self.init_order:
            order = [self.app.by_name[n].id for n in self.init_order]
        else:
            order = [img.id for img in self.app.images]
        obj = os.path.join(self.layout.obj, ELF, self.app.name, "harness.o")
        ensure_dir(os.path.dirname(obj))
        argv = compile_flags(ELF) + ["-DFIXTURE_TWIN_INITS=" + " ".join("X(%d)" % i for i in order)]
        if self.app.dlopen is not None:
            model = LoadModel(self.app, lambda path: path in self.shipped_paths())
            opened = [self.app.by_name[n].id for n in model.dlopen_init_order()]
            model.check_dlopen_paths()
            dlopen = self.app.dlopen
            slots = [([dlopen["path"]] + dlopen.get("aliases", []), dlopen["symbols"])]
            slots += [(d["paths"], d.get("symbols", [])) for d in dlopen["dependents"]]
            paths = ['P(%d,"%s")' % (slot, path) for slot, (names, _) in enumerate(slots) for path in names]
            symbols = ["S(%d,%s)" % (slot, name) for slot, (_, names) in enumerate(slots) for name in names]
            argv += ["-DFIXTURE_TWIN_DLOPEN_PATHS=" + " ".join(paths),
                     "-DFIXTURE_TWIN_DLOPEN_INITS=" + " ".join("X(%d)" % i for i in opened),
                     "-DFIXTURE_TWIN_DLSYMS=" + " ".join(symbols)]
        argv += ["-c", os.path.join(LIBSYSTEM_DIR, "elf", "harness.c"), "-o", obj]
        return obj, self.graph.add("cc:%s" % obj, argv=argv)

    def reexport_closure(self, image):
        files = []
        for link in image.links:
            if link.kind == "reexport":
                files.append(self.link_target[link.image][1])
                files += self.reexport_closure(self.app.by_name[link.image])
        return files


def make_upward(path, install_names):
    """Turns the LC_LOAD_DYLIB commands naming `install_names` into LC_LOAD_UPWARD_DYLIB.

    lld 19 parses -upward_library but does not implement it, so the builder links the
    dylib as a regular one and rewrites the command in place: both commands are a
    struct dylib_command, and the ordinals do not move. An ad-hoc code signature is
    re-hashed afterwards.
    """
    with open(path, "rb") as f:
        data = bytearray(f.read())
    magic, _, _, _, ncmds, _, _ = struct.unpack_from("<IiiIIII", data, 0)
    if magic != 0xFEEDFACF:
        raise FixtureError("%s: not a 64-bit Mach-O" % path)
    offset = 32
    signature = None
    pending = set(install_names)
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, offset)
        if cmd == LC_LOAD_DYLIB:
            name_offset = struct.unpack_from("<I", data, offset + 8)[0]
            name = bytes(data[offset + name_offset: offset + size]).split(b"\0")[0].decode()
            if name in pending:
                struct.pack_into("<I", data, offset, LC_LOAD_UPWARD_DYLIB)
                pending.discard(name)
        elif cmd == LC_CODE_SIGNATURE:
            signature = struct.unpack_from("<I", data, offset + 8)[0]
        offset += size
    if pending:
        raise FixtureError("%s: no LC_LOAD_DYLIB for %s" % (path, sorted(pending)))
    if signature is not None:
        rehash_code_signature(data, signature)
    with open(path, "wb") as f:
        f.write(data)


def rehash_code_signature(data, sig_offset):
    """Recomputes the page hashes of an ad-hoc signature's CodeDirectory (SHA-256 only)."""
    magic, _, count = struct.unpack_from(">III", data, sig_offset)
    if magic != 0xFADE0CC0:
        raise FixtureError("unexpected code signature magic %#x" % magic)
    for i in range(count):
        _, blob_offset = struct.unpack_from(">II", data, sig_offset + 12 + 8 * i)
        cd = sig_offset + blob_offset
        if struct.unpack_from(">I", data, cd)[0] != 0xFADE0C02:
            continue
        hash_offset, _, nspecial, ncode, limit = struct.unpack_from(">IIIII", data, cd + 16)
        hash_size, hash_type, _, page_shift = struct.unpack_from(">BBBB", data, cd + 36)
        if hash_type != 2 or hash_size != 32:
            raise FixtureError("unsupported code signature hash type %d" % hash_type)
        page = 1 << page_shift
        for n in range(ncode):
            start = n * page
            end = min(start + page, limit)
            digest = hashlib.sha256(bytes(data[start:end])).digest()
            data[cd + hash_offset + 32 * n: cd + hash_offset + 32 * (n + 1)] = digest


# ---------------------------------------------------------------------------
# First-principles model of dyld's loading


class LoadError(Exception):
    def __init__(self, info):
        super().__init__(info)
        self.info = info


class LoadModel:
    """What dyld does with an app's bundle, computed from the manifest and the shipped paths.

    Path resolution (dyld's rules):
      @executable_path/X  the main executable's directory + X
      @loader_path/X      the directory of the image that has the load command + X
      @rpath/X            each LC_RPATH of the image doing the load, then those of the image
                          that loaded it, and so on up to the main executable; @loader_path
                          inside an LC_RPATH is the directory of the image owning it; the
                          first existing file wins
      /abs/path           inside the system root
    Load order: dyld2's recursiveLoadLibraries — an image's dependencies are all loaded
    (in load-command order), then each dependency not yet processed has its own
    dependencies loaded the same way, depth first, with the rpath chain of its loader.
    """

    def __init__(self, app, exists, inserted=False):
        self.app = app
        self.exists = exists
        # With the app's inserted libraries: loaded right after the executable, their
        # dependencies after the executable's, their initializers before the executable's
        # (dyld4 prepare and runAllInitializersForMain; dyld-852 initializeMainExecutable).
        self.inserted = [app.by_name[n] for n in app.inserted] if inserted else []
        self.files = {}  # shipped path -> image
        for img in app.images:
            if img.ship:
                for c in img.copies:
                    self.files[c.path] = img

    def resolve(self, loader_path, rpath_chain, install_name):
        exe_dir = os.path.dirname(self.app.executable.path)
        if install_name.startswith("@executable_path/"):
            candidates = [os.path.normpath(os.path.join(exe_dir, install_name[len("@executable_path/"):]))]
        elif install_name.startswith("@loader_path/"):
            candidates = [os.path.normpath(os.path.join(os.path.dirname(loader_path), install_name[len("@loader_path/"):]))]
        elif install_name.startswith("@rpath/"):
            rest = install_name[len("@rpath/"):]
            candidates = [os.path.normpath(os.path.join(d, rest)) for d in rpath_chain]
        else:
            candidates = [install_name]
        for c in candidates:
            if self.exists(c):
                return c
        return None

    def expand_rpaths(self, image_path, rpaths):
        exe_dir = os.path.dirname(self.app.executable.path)
        out = []
        for r in rpaths:
            if r.startswith("@executable_path"):
                out.append(os.path.normpath(os.path.join(exe_dir, r[len("@executable_path/"):])))
            elif r.startswith("@loader_path"):
                out.append(os.path.normpath(os.path.join(os.path.dirname(image_path), r[len("@loader_path/"):])))
            else:
                out.append(r)
        return out

    def load(self, opened=None):
        """Returns (load order as [(image, path)], edges {(image, dep): path}) or raises LoadError.
        With `opened` (image, path): then that image is loaded as dlopen loads it, after the
        launch, its dependencies searched with its own rpaths then the executable's."""
        exe = self.app.executable
        order = [(exe, exe.path)] + [(img, img.path) for img in self.inserted]
        loaded = {path for _, path in order}
        edges = {}

        processed = set()

        def load_dependents(image, path, chain):
            processed.add(path)
            chain = self.expand_rpaths(path, image.rpaths) + chain
            deps = []
            for link in image.links:
                target = self.app.by_name[link.image]
                resolved = self.resolve(path, chain, target.install_name)
                if resolved is None:
                    if link.kind == "weak":
                        continue
                    raise LoadError({"kind": "missingDylib", "image": image.name, "installName": target.install_name})
                edges[(image.name, link.image)] = resolved
                if resolved not in loaded:
                    loaded.add(resolved)
                    order.append((self.files[resolved], resolved))
                deps.append((self.files[resolved], resolved))
            for dep, dep_path in deps:
                if dep_path not in processed:
                    load_dependents(dep, dep_path, chain)

        load_dependents(exe, exe.path, [])
        exe_chain = self.expand_rpaths(exe.path, exe.rpaths)
        for img in self.inserted:
            if img.path not in processed:
                load_dependents(img, img.path, exe_chain)
        if opened is not None:
            img, path = opened
            if path not in loaded:
                loaded.add(path)
                order.append((img, path))
            if path not in processed:
                load_dependents(img, path, exe_chain)
        return order, edges

    def dlopen_root(self):
        """The image the manifest's "dlopen" path resolves to, as main's dlopen finds it."""
        exe = self.app.executable
        path = self.resolve(exe.path, self.expand_rpaths(exe.path, exe.rpaths), self.app.dlopen["path"])
        if path is None or self.files.get(path) is not self.app.by_name[self.app.dlopen["image"]]:
            raise FixtureError("%s: the \"dlopen\" path does not resolve to its image" % self.app.name)
        return self.files[path], path

    def check_dlopen_paths(self):
        """Every other path the manifest's "dlopen" gives names the file dyld would find for
        it: an alias the opened image, a dependent's path that dependent, which the dlopen
        loads (dyld4 getLoader matches a loaded image by path or by file)."""
        exe = self.app.executable
        chain = self.expand_rpaths(exe.path, exe.rpaths)
        _, opened = self.dlopen_root()
        added = {path for _, path in self.dlopen_load()}
        named = [(a, opened) for a in self.app.dlopen.get("aliases", [])]
        for dependent in self.app.dlopen["dependents"]:
            image = self.app.by_name[dependent["image"]]
            found = [path for path, img in self.files.items() if img is image and path in added]
            if not found:
                raise FixtureError("%s: \"dlopen\" dependent %s is not loaded by the dlopen" % (self.app.name, image.name))
            named += [(p, found[0]) for p in dependent["paths"]]
        for path, expected in named:
            form = os.path.normpath(path) if path.startswith("/") else path
            if self.resolve(exe.path, chain, form) != expected:
                raise FixtureError("%s: \"dlopen\" path %s does not name %s" % (self.app.name, path, expected))

    def dlopen_load(self):
        """The images dlopen adds after the launch, in load order, as [(image, path)]."""
        launch, _ = self.load()
        order, _ = self.load(opened=self.dlopen_root())
        return order[len(launch):]

    def dlopen_init_order(self):
        """Image names whose initializers dlopen runs, in order: bottom up from the opened
        image over the images the launch did not load (dyld4 dlopen_from,
        runInitializersBottomUpPlusUpwardLinks; images initialized before are skipped)."""
        launch, _ = self.load()
        _, edges = self.load(opened=self.dlopen_root())
        return self._bottom_up_rounds([self.app.dlopen["image"]], edges, {img.name for img, _ in launch})

    def resolve_all(self):
        try:
            return self.load()[1]
        except LoadError:
            return self._resolve_each()

    def _resolve_each(self):
        # When launching fails, resolve what can be resolved (for the ELF twin's runpaths).
        edges = {}
        for img in self.app.images:
            for link in img.links:
                target = self.app.by_name[link.image]
                chain = self.expand_rpaths(img.path, img.rpaths) + self.expand_rpaths(
                    self.app.executable.path, self.app.executable.rpaths)
                resolved = self.resolve(img.path, chain, target.install_name)
                if resolved:
                    edges[(img.name, link.image)] = resolved
        return edges

    def init_order(self):
        """Image names in initializer order, as dyld4's runInitializersBottomUpPlusUpwardLinks
        (dyld-852 processInitializers, dyld3 computeInitOrder agree): bottom up from the main
        executable, an image's non-upward dependencies first (load-command order, missing
        weak dylibs skipped), each image once, marked when entered (a cycle ends at an image
        being visited). An upward dependency is only set aside; after the main executable's
        own initializers, the images set aside are initialized bottom up in the order they
        were set aside, their own upward links set aside for the next round, until none is
        left. Iterative (an explicit stack)."""
        _, edges = self.load()
        tops = [img.name for img in self.inserted] + [self.app.executable.name]
        return self._bottom_up_rounds(tops, edges, set())

    def _bottom_up_rounds(self, tops, edges, visited):
        visited = set(visited)
        result = []

        def bottom_up(start, dangling):
            if start in visited:
                return
            visited.add(start)
            stack = [(start, iter(self.app.by_name[start].links))]
            while stack:
                name, links = stack[-1]
                link = next(links, None)
                if link is None:
                    stack.pop()
                    result.append(name)
                elif (name, link.image) not in edges:
                    continue  # a missing weak dylib
                elif link.kind == "upward":
                    if link.image not in dangling:
                        dangling.append(link.image)
                elif link.image not in visited:
                    visited.add(link.image)
                    stack.append((link.image, iter(self.app.by_name[link.image].links)))

        for top in tops:
            dangling = []
            bottom_up(top, dangling)
            while dangling:
                later = []
                for name in dangling:
                    bottom_up(name, later)
                dangling = later
        return result


class CoalescingModel:
    """dyld's weak-definition coalescing from first principles, over the definitions the
    compiler emitted (the ELF objects' symbol tables: weak or not).

    An image takes part only if it carries MH_WEAK_DEFINES, i.e. defines some weak symbol
    (dyld4 Loader::resolveSymbol looks at a loader only if hasWeakDefs). Among the images
    that take part, in load order, the first non-weak definition of a name wins, else the
    first weak one. (Not modelled: lld also sets MH_WEAK_DEFINES on an image whose
    non-weak definition overrides a weak one in a dylib it links against; no fixture does
    that, and verify_macho_flags checks the flag on every built image.)
    """

    def __init__(self, app, definitions, load_order):
        self.app = app
        self.definitions = definitions  # image name -> {"weak": set, "strong": set} ("_"-prefixed)
        names = [img.name for img, _ in load_order] if load_order else [img.name for img in app.images]
        self.order = [n for n in dict.fromkeys(names)]
        self.participants = [n for n in self.order if definitions.get(n, {}).get("weak")]
        self.coalesced = set()
        for n in self.participants:
            self.coalesced |= definitions[n]["weak"]

    def winner(self, symbol):
        first_weak = None
        for n in self.participants:
            d = self.definitions[n]
            if symbol in d["strong"]:
                return n
            if symbol in d["weak"] and first_weak is None:
                first_weak = n
        return first_weak

    def hidden_names(self, image):
        """Names image defines that coalescing must not see: all of its definitions of
        coalesced names when it takes no part."""
        if image in self.participants:
            return set()
        return self.definitions.get(image, {}).get("strong", set()) & self.coalesced

    def summary(self):
        return {"participants": self.participants,
                "winners": {sym: self.winner(sym) for sym in sorted(self.coalesced)}}


def coalescing_file(layout, app):
    return os.path.join(layout.obj, ELF, app.name, "coalescing.json")


def read_definitions(files):
    """{image name: {"weak": names, "strong": names}} of the global definitions in each
    image's ELF objects (llvm-nm), names with the Mach-O leading underscore."""
    out = {}
    for image, objs in files.items():
        proc = subprocess.run([NM, "--defined-only", "--extern-only", "--format=posix"] + objs,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            raise FixtureError("llvm-nm failed:\n%s" % proc.stdout)
        weak, strong = set(), set()
        for line in proc.stdout.splitlines():
            words = line.split()
            if len(words) < 2 or line.endswith(":"):
                continue
            name, kind = words[0], words[1]
            if name.startswith("fixture_twin_init_"):
                continue  # the twin's own initializer entry
            (weak if kind in ("W", "V") else strong).add("_" + name)
        out[image] = {"weak": weak, "strong": strong}
    return out


# ---------------------------------------------------------------------------
# Top-level builds


def add_libsystem(graph, layout):
    """Builds the root's libSystem.B.dylib and, for Mach-O, libobjc.A.dylib; returns a job
    that is done when both are."""
    libsystem = _add_libsystem_only(graph, layout)
    if layout.arch == ELF:
        return libsystem
    return graph.add("system:%s" % layout.root, [libsystem, _add_libobjc(graph, layout)])


def _add_libobjc(graph, layout):
    objdir = os.path.join(layout.obj, layout.arch, "libobjc")
    ensure_dir(objdir)
    jobs, objs = [], []
    for src in LIBOBJC_SOURCES[layout.arch]:
        obj = os.path.join(objdir, os.path.splitext(src)[0] + ".o")
        jobs.append(graph.add("cc:%s" % obj, argv=compile_flags(layout.arch) + [
            "-c", os.path.join(LIBSYSTEM_DIR, "objc", src), "-o", obj]))
        objs.append(obj)
    out = layout.libobjc()
    ensure_dir(os.path.dirname(out))
    argv = [LD64, "-arch", layout.arch, "-platform_version"] + MACHO_PLATFORM[layout.arch] + [
        STYLE_FLAG[layout.style]] + SIGN_FLAG[layout.arch] + ["-dylib", "-install_name", LIBOBJC_INSTALL_NAME] + [
        os.path.relpath(o, os.path.dirname(out)) for o in objs] + [layout.libsystem(), "-o", os.path.basename(out)]
    return graph.add("ld:%s" % out, jobs + ["ld:%s" % layout.libsystem()], argv=argv, cwd=os.path.dirname(out))


def _add_libsystem_only(graph, layout):
    objdir = os.path.join(layout.obj, layout.arch, "libSystem")
    ensure_dir(objdir)
    obj = os.path.join(objdir, "libSystem.o")
    cc = graph.add("cc:%s" % obj, argv=compile_flags(layout.arch) + ["-c", os.path.join(LIBSYSTEM_DIR, "libSystem.c"), "-o", obj])
    out = layout.libsystem()
    ensure_dir(os.path.dirname(out))
    if layout.arch == ELF:
        argv = [LDELF, "-shared", "-z", "now", "--hash-style=gnu", "--build-id=none", "-soname", os.path.basename(out), obj, "-o", out]
    else:
        argv = [LD64, "-arch", layout.arch, "-platform_version"] + MACHO_PLATFORM[layout.arch] + [
            STYLE_FLAG[layout.style]] + SIGN_FLAG[layout.arch] + ["-dylib", "-install_name", LIBSYSTEM_INSTALL_NAME,
            os.path.relpath(obj, os.path.dirname(out)), "-o", os.path.basename(out)]
    return graph.add("ld:%s" % out, [cc], argv=argv, cwd=os.path.dirname(out))


def add_app(graph, layout, app, libsystem_job):
    builder = AppBuild(graph, layout, app, libsystem_job)
    builder.build()
    manifest = os.path.join(app.source_dir, "manifest.json")
    bundle = layout.bundle(app)
    ensure_dir(bundle)
    graph.add("manifest:%s" % bundle, action=lambda: shutil.copyfile(manifest, os.path.join(bundle, "manifest.json")))
    return builder


def check_root_collisions(apps):
    seen = {}
    for app in apps:
        for img in app.images:
            for c in img.copies:
                if c.path.startswith("/"):
                    if c.path in seen and seen[c.path] != app.name:
                        raise FixtureError("%s and %s both put %s in the root" % (seen[c.path], app.name, c.path))
                    seen[c.path] = app.name


# ---------------------------------------------------------------------------
# ELF twin: run and compare


def run_elf_twin(layout, app, inserted=False):
    """Runs the ELF twin; returns {"result": N, "initIds": [...]} or {"stderr": text}.
    With `inserted`, the app's inserted libraries are preloaded (LD_PRELOAD: loaded after
    the executable, before its dependencies, first in the lookup scope after it)."""
    exe = layout.shipped_file(app, app.executable.path)
    # LD_DYNAMIC_WEAK: ld.so keeps looking past a weak definition for a non-weak one (glibc
    # do_lookup_x), which is dyld's rule among the images that take part in coalescing.
    env = {"PATH": "/usr/bin:/bin", "LD_BIND_NOW": "1", "LD_DYNAMIC_WEAK": "1"}
    if inserted:
        env["LD_PRELOAD"] = ":".join(layout.shipped_file(app, app.by_name[n].path) for n in app.inserted)
    proc = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=30)
    if proc.returncode != 0:
        return {"exit": proc.returncode, "stderr": proc.stderr.strip()}
    out = {}
    for line in proc.stdout.splitlines():
        words = line.split()
        if words and words[0] == "result":
            out["result"] = int(words[1])
        elif words and words[0] == "init":
            out["initIds"] = [int(w) for w in words[1:]]
    return out


def verify_app(layout, app):
    """Checks an app's manifest expectations; returns a list of failure messages.

    result: the ELF twin's main must return it.
    initOrder: the dyld model's order, restricted to the images whose initializers
      the twin saw run, must equal it, and so must the twin's init log (the twin
      runs initializers in the model's order: this checks which images have one).
    error missingDylib: the dyld model must fail on that image and install name, and
      the twin must fail to start because a shared object cannot be opened.
    error missingSymbol: the dyld model must load every image, and the twin must
      fail on the undefined symbol.
    """
    failures = []
    where = app.name
    shipped = {c.path for img in app.images if img.ship for c in img.copies}
    model = LoadModel(app, lambda p: p in shipped)
    try:
        model_order = model.init_order()
        load_error = None
    except LoadError as e:
        model_order, load_error = None, e.info
    twin = run_elf_twin(layout, app)
    expect = app.expect
    if "error" in expect:
        err = expect["error"]
        if "result" in twin:
            failures.append("%s: the ELF twin ran (result %d) but the manifest expects %s" % (where, twin["result"], err))
        if err.get("kind") == "missingDylib":
            wanted = {"kind": "missingDylib", "image": err.get("image"), "installName": err.get("installName")}
            if load_error != wanted:
                failures.append("%s: dyld model gives %s, manifest says %s" % (where, load_error, wanted))
            needle = "%s: cannot open shared object file" % os.path.basename(err.get("installName", "?"))
            if needle not in twin.get("stderr", ""):
                failures.append("%s: ELF twin did not fail with %r: %s" % (where, needle, twin))
        elif err.get("kind") == "missingSymbol":
            if load_error is not None:
                failures.append("%s: dyld model fails to load: %s" % (where, load_error))
            symbol = err.get("symbol", "")
            needle = "undefined symbol: %s" % (symbol[1:] if symbol.startswith("_") else symbol)
            if needle not in twin.get("stderr", ""):
                failures.append("%s: ELF twin did not fail with %r: %s" % (where, needle, twin))
            image = app.by_name.get(err.get("image"))
            if image is None or err.get("library") not in [l.image for l in image.links]:
                failures.append("%s: error.image must name an image that links error.library" % where)
        else:
            failures.append("%s: unknown error kind %r" % (where, err.get("kind")))
        return failures
    if load_error is not None:
        failures.append("%s: dyld model fails to load: %s" % (where, load_error))
        return failures
    if "result" not in twin:
        failures.append("%s: ELF twin failed: %s" % (where, twin))
        return failures
    if twin["result"] != expect.get("result"):
        failures.append("%s: ELF twin returns %d, manifest expects %s" % (where, twin["result"], expect.get("result")))
    if "coalesced" in expect:
        with open(coalescing_file(layout, app)) as f:
            winners = json.load(f)["winners"]
        for symbol, image in sorted(expect["coalesced"].items()):
            if winners.get(symbol) != image:
                failures.append("%s: the coalescing model binds %s to %s, manifest says %s" % (
                    where, symbol, winners.get(symbol), image))
    if "initLog" in expect and twin.get("initIds") != expect["initLog"]:
        failures.append("%s: ELF twin's init log %s, manifest says %s" % (where, twin.get("initIds"), expect["initLog"]))
    if "initOrder" in expect:
        names = {img.id: img.name for img in app.images}
        twin_order = [names.get(i, "?%d" % i) for i in twin.get("initIds", [])]
        # The log holds what dlopen initialized too, after the launch's.
        opened = app.dlopen.get("initOrder", []) if app.dlopen is not None else []
        ran = set(twin_order[:len(twin_order) - len(opened)])
        modeled = [n for n in model_order if n in ran]
        if modeled != expect["initOrder"]:
            failures.append("%s: dyld model's init order %s, manifest says %s" % (where, modeled, expect["initOrder"]))
        if twin_order != expect["initOrder"] + opened:
            failures.append("%s: ELF twin's init log %s, manifest says %s then dlopen's %s" % (where, twin_order, expect["initOrder"], opened))
        if app.dlopen is not None:
            ran_opened = set(twin_order[len(twin_order) - len(opened):])
            modeled_opened = [n for n in model.dlopen_init_order() if n in ran_opened]
            if modeled_opened != opened:
                failures.append("%s: dyld model's dlopen init order %s, manifest says %s" % (where, modeled_opened, opened))
    if app.inserted:
        failures += verify_inserted(layout, app, shipped)
    return failures


def verify_inserted(layout, app, shipped):
    """expectInserted: the launch with the inserted libraries. The twin runs with them
    preloaded; its result must be the manifest's, and its init log the dyld model's order
    for that launch (restricted to the images with an initializer), which must equal the
    manifest's initOrder when it gives one."""
    where = app.name + " (inserted)"
    expect = app.expect_inserted
    twin = run_elf_twin(layout, app, inserted=True)
    if "result" not in twin:
        return ["%s: ELF twin failed: %s" % (where, twin)]
    failures = []
    if twin["result"] != expect.get("result"):
        failures.append("%s: ELF twin returns %d, manifest expects %s" % (where, twin["result"], expect.get("result")))
    names = {img.id: img.name for img in app.images}
    twin_order = [names.get(i, "?%d" % i) for i in twin.get("initIds", [])]
    modeled = [n for n in LoadModel(app, lambda p: p in shipped, inserted=True).init_order() if n in set(twin_order)]
    if twin_order != modeled:
        failures.append("%s: ELF twin's init log %s, the dyld model's order %s" % (where, twin_order, modeled))
    if "initOrder" in expect and modeled != expect["initOrder"]:
        failures.append("%s: dyld model's init order %s, manifest says %s" % (where, modeled, expect["initOrder"]))
    return failures


def verify_weak_defines(macho_layout, elf_layout, app):
    """The coalescing model's premise, checked on the built Mach-O images: an image carries
    MH_WEAK_DEFINES exactly when the model lets it take part in coalescing."""
    with open(coalescing_file(elf_layout, app)) as f:
        participants = set(json.load(f)["participants"])
    failures = []
    for img in app.images:
        if not img.ship:
            continue
        path = macho_layout.shipped_file(app, img.path)
        with open(path, "rb") as f:
            header = f.read(32)
        flags = struct.unpack_from("<I", header, 24)[0]
        if bool(flags & MH_WEAK_DEFINES) != (img.name in participants):
            failures.append("%s [%s]: %s %s MH_WEAK_DEFINES but the coalescing model says it %s part" % (
                app.name, macho_layout.bundle_key, img.name, "has" if flags & MH_WEAK_DEFINES else "lacks",
                "takes" if img.name in participants else "takes no"))
    return failures
