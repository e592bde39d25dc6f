// Package e2e tests snigate end to end with real parts: Debian's
// docker-registry (distribution) demanding a client certificate, skopeo and
// containerd's ctr as pull clients, and the snigate binary, each in its own
// network namespace so that the node really has no route to the registry.
//
// The package has no code outside its tests. Run it as root:
//
//	go test ./test/e2e/                      # the whole suite (~1 minute)
//	go test ./test/e2e/ -run TestFailover -v # one test, world logs on failure
//
// Without root (or without `ip netns`), every test skips with a loud
// message, unless SNIGATE_REQUIRE_E2E=1 (set by .ci/run), which turns the
// skip into a failure. See README.md for the world it builds and how to
// debug a failure.
package e2e
