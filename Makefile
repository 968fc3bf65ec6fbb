# klpresolve: build, test, bench, fixtures.
GO       ?= go
FUZZTIME ?= 10s
# Minimising each new interesting input may take up to 60 s by default,
# which would eat a short run whole.
FUZZMIN  ?= 2s
BIN      ?= bin/klpresolve

.PHONY: all build test ports fuzz bench fixtures clean

all: build

# Static (no cgo): the tool needs nothing from libc, and a dynamically
# linked binary pays the loader about 1 ms per run (see README, Install).
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/klpresolve

# vet, the race-detector test run, then every fuzz target for $(FUZZTIME).
# The race detector makes cfi's readers use atomic stores, so the
# read-side tests run once more without it, with the membarrier(2)-fenced
# readers that are the default.
test:
	$(GO) vet ./...
	$(GO) test -race ./...
	$(GO) test -count=1 -run 'Torture|Synchronous|Fenced|Holds|Protection' ./cfi
	$(MAKE) ports
	$(MAKE) fuzz

# The other systems and word sizes users build on: vet for each (they
# compile), and the tests on 32-bit x86, which this amd64 machine runs.
PORTS ?= darwin/arm64 windows/amd64 freebsd/amd64 linux/arm linux/arm64
ports:
	@set -e; for p in $(PORTS); do \
	  echo "vet $$p"; GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...; \
	done
	GOARCH=386 $(GO) test ./...

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

# Rebuild the committed test fixtures from their sources (needs gcc and the
# Debian cross compilers; see testdata/README.md). go test never needs them.
fixtures:
	$(MAKE) -C testdata

clean:
	rm -rf bin
