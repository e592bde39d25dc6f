# snigate — build, test, fuzz, bench.
# `make test` is what CI runs (.ci/run): it installs the Debian packages the
# end-to-end tests need when they are missing, then runs every test of every
# module in this repository.

GO       ?= go
PKGS     ?= ./...
FUZZTIME ?= 30s

.PHONY: all build test test-deps vet unit race fuzz fuzz-short stress bench coredns clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -o bin/snigate ./cmd/snigate

test: test-deps vet unit race fuzz-short

# Debian packages used by the end-to-end tests and benchmarks (registry,
# pull clients, real peers, load tools). Installed only when missing.
test-deps:
	./test/deps.sh

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -count=1 -timeout 15m $(PKGS)
	@for m in coredns-plugin deploy; do \
		if [ -f $$m/go.mod ]; then (cd $$m && $(GO) vet ./... && $(GO) test -count=1 -timeout 20m ./...) || exit 1; fi; \
	done

# The concurrent packages again under the race detector (the end-to-end
# tests drive a separately built binary, so they gain nothing from it).
RACE_PKGS ?= ./sni/... ./dnsresponder/... ./upstream/... ./internal/...
race:
	$(GO) test -race -count=1 -timeout 15m $(RACE_PKGS)

# Each fuzz target of every module for FUZZTIME (go test runs one -fuzz
# target at a time); failures are listed at the end.
fuzz:
	GO=$(GO) ./test/fuzz.sh $(FUZZTIME)

# The short pass CI runs as the last step of `make test`: 500 inputs per
# target prove every target still builds, passes its seed corpus and
# fuzzes. A count, not a duration: with a duration, Go 1.26's fuzzing
# coordinator can fail a target with a bare "context deadline exceeded"
# when its workers are starved as the time runs out (go.dev/issue/75804,
# fixed in Go 1.27); it did so under stress-ng in `make stress`.
FUZZSHORT ?= 500x
fuzz-short:
	GO=$(GO) ./test/fuzz.sh $(FUZZSHORT)

# `make test` on fresh clones of HEAD beside `stress-ng --cpu 2`, as a busy
# CI machine runs it: STRESS_RUNS runs (default 3), one summary line each;
# fails when any run failed (test/stress.sh).
stress:
	./test/stress.sh

bench:
	./bench/run.sh

# A CoreDNS binary with the snigate plugin: coredns-plugin/bin/coredns.
coredns:
	$(MAKE) -C coredns-plugin build

clean:
	rm -rf bin
