# The two commands that matter: `make demo` (the main job) and `make test`.
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)

SWIFT ?= swift
CORPUS ?= ../shared/corpus
DYLD3 := .build/release/dyld3

.PHONY: all bootstrap build release reader-fixtures fixtures demo test oracle-check bench bench-processes fuzz clean

all: build

bootstrap:
	@tools/bootstrap

build: bootstrap
	$(SWIFT) build

# On a terminal (stderr; stdout is the substitution's pipe) swift build shows its progress; in a log, one line says what is under way.
# The release build gives the packages it depends on (swift-crypto above all) the flag Package.swift
# gives our own targets: metadata by accessor, not by demangling. SHA256's first use otherwise scans
# every protocol conformance in the process, about 40 µs of a fresh launch (docs/performance.md).
RELEASE_FLAGS := -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors

release: bootstrap
	@echo "== building dyld3 (release; a few minutes the first time)"
	@$(SWIFT) build -c release --product dyld3 $(RELEASE_FLAGS) $$([ -t 2 ] || echo --quiet)

reader-fixtures: bootstrap
	@tools/build-reader-fixtures

# The fixture apps (Fixtures/apps) for both arches and both fixup styles, with their system roots.
fixtures: bootstrap
	@tools/build-fixtures

# The main job, end to end: build the fixture apps and a generated 100-framework app,
# install their closures into cache/, launch each through dyld2 and dyld3, compare the
# two, and print one table. Then a look
# at a real Apple-built binary through the reader.
demo: release fixtures
	@echo "== generating a 100-framework app (tools/gen-app --preset 100; a file whose bytes are unchanged is kept as it was)"
	@tools/gen-app --preset 100 --seed 1 --out build/demo-gen100 > /dev/null
	@echo "== installing, launching (dyld2, dyld3) and comparing every app"
	@tools/demo $(DYLD3) build/fixtures cache --runs 5 --extra build/demo-gen100 x86_64 chained
	@echo
	@echo "== the 100-framework app as a prelinked set (docs/prelinked.md): installed with its copy slid for this boot,"
	@echo "   launched from that copy (mapped as it lies, nothing stored), compared with dyld2 at the copy's address"
	@$(DYLD3) install build/demo-gen100/gen100.app --root build/demo-gen100/root --cache cache --prelink
	@$(DYLD3) launch build/demo-gen100/gen100.app --root build/demo-gen100/root --cache cache --mode prelinked --stats | grep -E "main returned|total pre-main|prelinked set:"
	@$(DYLD3) compare build/demo-gen100/gen100.app --root build/demo-gen100/root --cache cache --prelinked
	@echo
	@echo "== the dyld shared cache (docs/shared-cache.md): an app whose lower 32 of 40 frameworks are the system's,"
	@echo "   the root's cache built in Apple's format, the closure bound into it, launched from it, compared with dyld2 from the files;"
	@echo "   then its prelinked set, which holds the app's own images only and binds into the cache, against dyld2 from the cache"
	@tools/gen-app --dylibs 40 --system 32 --seed 5 --out build/demo-cache > /dev/null
	@$(DYLD3) shared-cache build --root build/demo-cache/root
	@$(DYLD3) install build/demo-cache/gen40.app --root build/demo-cache/root --cache cache --prelink
	@$(DYLD3) launch build/demo-cache/gen40.app --root build/demo-cache/root --cache cache --mode dyld3 --stats | grep -E "main returned|total pre-main|shared cache:"
	@$(DYLD3) compare build/demo-cache/gen40.app --root build/demo-cache/root --cache cache
	@$(DYLD3) launch build/demo-cache/gen40.app --root build/demo-cache/root --cache cache --mode prelinked --stats | grep -E "main returned|total pre-main|shared cache:"
	@$(DYLD3) compare build/demo-cache/gen40.app --root build/demo-cache/root --cache cache --prelinked --shared-cache auto
	@echo
	@echo "== dyld3 inspect $(CORPUS)/opcodes_x86_64/libgfortran.5.dylib (built by Apple's ld64)"
	@$(DYLD3) inspect $(CORPUS)/opcodes_x86_64/libgfortran.5.dylib
	@echo "== its bind table, first rows (the same rows as llvm-objdump-19 --macho --bind)"
	@$(DYLD3) inspect --bind $(CORPUS)/opcodes_x86_64/libgfortran.5.dylib | head -8

# Each step announces itself; the verdict (passed, or the step that failed) is the last line
# tools/test-steps prints. About 9 minutes on 2 cores after `make demo`; 1 GB in build/ and .build/.
test: bootstrap reader-fixtures fixtures
	@tools/test-steps .build/debug/dyld3 $(CORPUS)

# The built `dyld3 inspect` binary against llvm-objdump-19 on every corpus file, slice and flag.
oracle-check: release reader-fixtures fixtures
	@tools/compare-with-objdump $(DYLD3) $(CORPUS) build/reader-fixtures build/fixtures

# Launch benchmarks (dyld2, dyld3, the mapping floor, glibc's loader; docs/performance.md),
# dyld3 against the floor pooled over 8 bench processes, then the micro benchmarks
# (package-benchmark, a separate package under Benchmarks/).
bench: release
	@$(DYLD3) bench --dylibs 1,10,100,400,1000 --runs 11 --out bench/results
	@tools/bench-processes $(DYLD3) --dylibs 100,400,1000 --runs 11 --processes 8 --out bench/processes
	cd Benchmarks && $(SWIFT) package benchmark

# Only the pooled comparison of dyld3 with the mapping floor (tools/bench-processes).
bench-processes: release
	@tools/bench-processes $(DYLD3) --dylibs 100,400,1000 --runs 11 --processes 8 --out bench/processes

# The fuzz campaign: every libFuzzer target (Fuzz/) to 10 million executions, optimized,
# two processes each (docs/reliability.md has the last campaign's figures).
fuzz: build reader-fixtures fixtures
	@tools/fuzz --runs 10000000 --jobs 2 --release

clean:
	rm -rf .build build
