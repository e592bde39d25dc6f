package deploy

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// CoreDNS's forward plugin stops its connection manager only from a
		// finalizer when the proxy is garbage-collected, not on shutdown.
		goleak.IgnoreTopFunction("github.com/coredns/coredns/plugin/pkg/proxy.(*Transport).connManager"))
}

// readFile reads a file of this directory tree (paths relative to deploy/).
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return b
}
