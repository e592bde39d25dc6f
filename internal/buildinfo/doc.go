// Package buildinfo says which build of snigate is running: its version,
// VCS commit, build date, Go version and platform.
//
// `make build`, the Dockerfile and the package build stamp the first three
// at link time (see LDFlags in the Makefile):
//
//	go build -ldflags "-X github.com/snigate/snigate/internal/buildinfo.version=v0.2.0 \
//	  -X github.com/snigate/snigate/internal/buildinfo.commit=$(git rev-parse HEAD) \
//	  -X github.com/snigate/snigate/internal/buildinfo.date=2026-12-01T08:00:00Z" ./cmd/snigate
//
// A build without them falls back to what the Go toolchain recorded
// (the module version of `go install ...@v0.2.0`, vcs.revision and
// vcs.time when built from a checkout with VCS stamping), then to
// placeholders. Use:
//
//	info := buildinfo.Get()
//	fmt.Println(info.Version, info.Commit)
package buildinfo
