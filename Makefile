# The two commands that matter: `make demo` (the main job) and `make test`.
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)

SWIFT ?= swift
CORPUS ?= ../shared/corpus
DYLD3 := .build/release/dyld3

.PHONY: all bootstrap build release reader-fixtures fixtures demo test oracle-check bench clean

all: build

bootstrap:
	@tools/bootstrap

build: bootstrap
	$(SWIFT) build

release: bootstrap
	@$(SWIFT) build -c release --product dyld3 2>&1 | grep -vE '^\[[0-9]+/[0-9]+\]|^Building|^Build complete|^Compiling|^Write' || true
	@test -x $(DYLD3)

reader-fixtures: bootstrap
	@tools/build-reader-fixtures

# The fixture apps (Fixtures/apps) for both arches and both fixup styles, with their system roots.
fixtures: bootstrap
	@tools/build-fixtures

# The main job, grown issue by issue. For now: inspect a fixture and a real Apple-built file.
demo: release reader-fixtures
	@echo "== dyld3 inspect build/reader-fixtures/x86_64-chained/app"
	@$(DYLD3) inspect build/reader-fixtures/x86_64-chained/app
	@$(DYLD3) inspect --deps --chained-fixups build/reader-fixtures/x86_64-chained/app
	@echo
	@echo "== dyld3 inspect $(CORPUS)/opcodes_x86_64/libgfortran.5.dylib (built by Apple's ld64)"
	@$(DYLD3) inspect $(CORPUS)/opcodes_x86_64/libgfortran.5.dylib
	@$(DYLD3) inspect --stats $(CORPUS)/opcodes_x86_64/libgfortran.5.dylib
	@echo
	@echo "== the same file's bind table, first rows (identical to llvm-objdump-19 --macho --bind)"
	@$(DYLD3) inspect --bind $(CORPUS)/opcodes_x86_64/libgfortran.5.dylib | head -8

test: bootstrap reader-fixtures fixtures
	@tools/build-fixtures --verify-expected
	$(SWIFT) test
	@tools/compare-with-objdump .build/debug/dyld3 $(CORPUS) build/reader-fixtures build/fixtures

# The built `dyld3 inspect` binary against llvm-objdump-19 on every corpus file, slice and flag.
oracle-check: release reader-fixtures fixtures
	@tools/compare-with-objdump $(DYLD3) $(CORPUS) build/reader-fixtures build/fixtures

# Micro benchmarks of the reader (package-benchmark, a separate package under Benchmarks/).
bench: bootstrap
	cd Benchmarks && $(SWIFT) package benchmark

clean:
	rm -rf .build build
