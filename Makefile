# snigate — build, test, fuzz, bench.
# `make test` is what CI runs (.ci/run): it installs the Debian packages the
# end-to-end tests need when they are missing, then runs every test of every
# module in this repository.

GO       ?= go
PKGS     ?= ./...
FUZZTIME ?= 30s

# What the build says it is (`snigate version`, snigate_build_info, the
# first log line): stamped into internal/buildinfo at link time. VERSION is
# the nearest v* tag (git describe), else the next release of CHANGELOG.md
# as a development version. BUILD_DATE honours SOURCE_DATE_EPOCH
# (reproducible builds). The Dockerfile takes the same three as build args.
VERSION    ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || echo v0.1.0-dev+$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown))
COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BUILD_DATE ?= $(shell date -u -d "@$${SOURCE_DATE_EPOCH:-$$(date +%s)}" +%Y-%m-%dT%H:%M:%SZ)
BUILDINFO  := github.com/snigate/snigate/internal/buildinfo
LDFLAGS    := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) -X $(BUILDINFO).date=$(BUILD_DATE)

.PHONY: all build man pkg deb image test test-deps vet bigendian unit race fuzz fuzz-short stress bench coredns clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/snigate ./cmd/snigate

# Man pages of every command (section 1), generated from the same cobra
# definitions as --help: bin/man/snigate*.1.
man: build
	rm -rf bin/man && bin/snigate man --out bin/man

# The Debian package: bin/snigate_VERSION_ARCH.deb, built with nfpm
# (deploy/package/nfpm.yaml), fetched from the Go module proxy at the
# version pinned here. pkg lays out what it carries in bin/pkg: the binary,
# the units pointing at /usr/bin/snigate, the man pages and the completion
# scripts. The Debian version is VERSION without its "v", "-" made "~" (a
# development build sorts before its release).
NFPM_VERSION ?= v2.48.0
NFPM         ?= $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)
DEB_VERSION  ?= $(subst -,~,$(patsubst v%,%,$(VERSION)))
DEB_ARCH     ?= $(shell $(GO) env GOARCH)
DEB_FILE     ?= bin/snigate_$(DEB_VERSION)_$(DEB_ARCH).deb
# The systemd version of the distribution the package is for (Debian 12:
# 252). The unit of deploy/systemd is right as it is for 252 (Type=notify,
# ExecReload= checking the file, then SIGHUP); from 253, which introduced
# Type=notify-reload, the packaged unit gets what
# deploy/systemd/snigate-systemd-253.conf says instead (Type=notify-reload,
# ExecReload= only the check: systemd sends SIGHUP and waits for READY=1).
PKG_SYSTEMD  ?= 252

pkg: man
	rm -rf bin/pkg && mkdir -p bin/pkg/systemd bin/pkg/man bin/pkg/completion
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o bin/pkg/snigate ./cmd/snigate
	for u in deploy/systemd/*.service deploy/systemd/*.socket; do \
		if [ -f "$$u" ]; then sed 's#/usr/local/bin/snigate#/usr/bin/snigate#g' "$$u" > bin/pkg/systemd/$$(basename "$$u"); fi; \
	done
	if [ $(PKG_SYSTEMD) -ge 253 ]; then \
		sed -i -e 's#^Type=notify$$#Type=notify-reload#' -e '\#^ExecReload=/bin/kill -HUP $$MAINPID$$#d' bin/pkg/systemd/snigate.service; \
	fi
	for m in bin/man/*.1; do gzip -9n -c "$$m" > bin/pkg/man/$$(basename "$$m").gz; done
	for sh in bash zsh fish; do bin/snigate completion $$sh > bin/pkg/completion/snigate.$$sh; done

deb: pkg
	DEB_VERSION='$(DEB_VERSION)' DEB_ARCH='$(DEB_ARCH)' $(NFPM) package -f deploy/package/nfpm.yaml -p deb -t $(DEB_FILE)
	@echo "built $(DEB_FILE)"

# The container image (deploy/container/Dockerfile), stamped like `make build`.
IMAGE ?= snigate:$(subst +,-,$(VERSION))
image:
	docker build -f deploy/container/Dockerfile --build-arg VERSION=$(VERSION) \
		--build-arg COMMIT=$(COMMIT) --build-arg BUILD_DATE=$(BUILD_DATE) -t $(IMAGE) .

test: test-deps vet unit race fuzz-short

# Debian packages used by the end-to-end tests and benchmarks (registry,
# pull clients, real peers, load tools). Installed only when missing.
test-deps:
	./test/deps.sh

# The raw system calls and sockaddr conversions must hold on big-endian
# hosts too (internal/rawnet): vet and build them for s390x and ppc64.
vet:
	$(GO) vet $(PKGS)
	GOARCH=s390x $(GO) vet ./internal/rawnet/ ./sni/
	GOARCH=ppc64 $(GO) build ./internal/rawnet/ ./sni/
	@if command -v qemu-s390x >/dev/null; then \
		GOARCH=s390x $(GO) test -count=1 -exec qemu-s390x ./internal/rawnet/; \
	else echo "qemu-s390x not installed (Debian: qemu-user): rawnet's tests not run on big-endian"; fi

# bigendian runs the splice path's tests on s390x under qemu-s390x (Debian
# package qemu-user); about two minutes. Not part of `make test`.
bigendian:
	GOARCH=s390x $(GO) test -count=1 -timeout 20m -exec qemu-s390x ./internal/rawnet/ ./sni/

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
