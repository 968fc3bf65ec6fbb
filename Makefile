# klpresolve: build, test, bench, fixtures.
GO       ?= go
FUZZTIME ?= 10s
# No minimising: Go minimises every input that finds new coverage, not
# only failing ones, for up to -fuzzminimizetime each (60 s by default),
# and its last pass tries removing every run of bytes, O(n^2) calls on a
# seed of n bytes (100 KB modules): the workers spent a short run doing
# only that (FuzzRun: 12,167 execs in 20 s with 2s, 118,286 with 0). A
# failing input is still written to testdata/fuzz, unminimised.
FUZZMIN  ?= 0
BIN      ?= bin/klpresolve

.PHONY: all build test ports fuzz bench fixtures docs oracle buildtools clean

all: build

# Static (no cgo): the tool needs nothing from libc, and a dynamically
# linked binary pays the loader about 1 ms per run (see README, Install).
# The commit goes in with -ldflags too: --version says it even where the
# toolchain stamps no VCS information (-buildvcs=false, a tarball).
COMMIT   ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
build:
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.commit=$(COMMIT)" -o $(BIN) ./cmd/klpresolve

# vet, every test, the race-detector run, then every fuzz target for
# $(FUZZTIME). The detector makes memory-heavy tests 5-20 times slower, so
# they check less under it (testutil.Light: fewer corpus files, worker
# counts and kernels), having run in full just before; so do the runs
# on the other platforms (make ports: -tags klplight). It also makes
# cfi's readers use atomic stores, so the first run is the one with the
# membarrier(2)-fenced readers that are the default.
test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...
	$(GO) test -race ./...
	$(MAKE) ports
	$(MAKE) fuzz

# The other systems and word sizes users build on: vet for each other
# build-tag path (another Unix, macOS on arm64, Windows: linux/arm64 builds
# the same files as amd64), the tests on a 32-bit word size, and on
# big-endian s390x under qemu-user when it is installed (.ci/run does).
# 32-bit: x86 natively where the kernel runs 32-bit programs; a kernel
# without CONFIG_IA32_EMULATION (Firecracker's) does not, and Go's 386
# runtime fails under qemu-i386 ("bad g in signal handler"), so there
# 32-bit ARM under qemu-arm, for the packages that read and write binary
# formats (PORTS32: the layers above them add no word-size arithmetic).
PORTS ?= darwin/arm64 windows/amd64 freebsd/amd64
PORTS32 ?= ./kallsyms/... ./klp/... ./modplt/... ./symvers/... ./cfi/... ./ftrace/... ./internal/...
ports:
	@set -e; for p in $(PORTS); do \
	  echo "vet $$p"; GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...; \
	done
	@if GOARCH=386 $(GO) test -count=1 -run '^$$' ./internal/par >/dev/null 2>&1; then \
	  echo "GOARCH=386 $(GO) test -tags klplight ./..."; GOARCH=386 $(GO) test -tags klplight ./...; \
	elif command -v qemu-arm >/dev/null 2>&1; then \
	  echo "vet linux/arm"; GOARCH=arm $(GO) vet ./...; \
	  echo "GOARCH=arm $(GO) test -tags klplight -exec qemu-arm $(PORTS32) (this kernel runs no 32-bit x86 programs)"; \
	  GOARCH=arm $(GO) test -tags klplight -exec qemu-arm $(PORTS32); \
	else \
	  echo "vet linux/arm"; GOARCH=arm $(GO) vet ./...; \
	  echo "ports: this kernel runs no 32-bit x86 programs and there is no qemu-arm (apt-get install qemu-user): 32-bit tests not run"; \
	fi
	@if command -v qemu-s390x >/dev/null 2>&1; then \
	  echo "GOARCH=s390x $(GO) test -tags klplight -exec qemu-s390x ./..."; GOARCH=s390x $(GO) test -tags klplight -exec qemu-s390x ./...; \
	else \
	  echo "ports: no qemu-s390x (apt-get install qemu-user): big-endian tests not run"; \
	fi

# Each fuzz target alone (go test -fuzz takes one target per run), through
# scripts/fuzz-one, which tells Go 1.26's fuzztime deadline race from a
# finding (see the script).
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    GO=$(GO) scripts/fuzz-one $$pkg $$t $(FUZZTIME) $(FUZZMIN); \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Rebuild the committed test fixtures from their sources (needs gcc, the
# Debian cross compilers and Debian's 6.1 kernel headers; see
# testdata/README.md). go test never needs them.
# docs/cli (a Markdown page per command) and docs/man (a man page per
# command), made by cobra/doc from the command tree; TestGeneratedDocs
# fails when they are stale.
docs:
	$(GO) test ./cmd/klpresolve -run '^TestGeneratedDocs$$' -count=1 -args -update-docs

fixtures:
	$(MAKE) -C testdata

# Boot Debian's 6.1 amd64, arm64, ppc64el, armhf and s390x kernels under
# qemu and record what they do with the oracle's modules
# (testdata/oracle/Makefile: qemu, busybox-static, cpio, the kernel
# headers, cross compilers and 1 GB of downloads). go test never needs it.
oracle:
	$(MAKE) -C testdata/oracle

# Build livepatch modules with the real build tools, klp-build (Linux
# 7.2) and kpatch-build 0.9.10 (Linux 6.12), boot the kernels they were
# built for and record what each did with them (testdata/buildtools:
# two kernel builds, about 3 GB under /var/tmp). go test never needs it.
buildtools:
	$(MAKE) -C testdata/buildtools

clean:
	rm -rf bin
