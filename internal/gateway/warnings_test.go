package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/config"
)

func TestKeyFileWarnings(t *testing.T) {
	dir := t.TempDir()
	key := func(name string, mode os.FileMode, gid int) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte("k"), mode))
		must(t, os.Chmod(p, mode))
		must(t, os.Chown(p, os.Getuid(), gid))
		return p
	}
	foreignGID := 4242 // a group this test process is not in
	if os.Getuid() != 0 {
		t.Skip("needs root to give a file a foreign group")
	}
	tests := []struct {
		name string
		path string
		warn bool
	}{
		{name: "0600", path: key("private.key", 0o600, os.Getgid()), warn: false},
		{name: "0644 world-readable", path: key("world.key", 0o644, os.Getgid()), warn: true},
		{name: "0440 own group (Kubernetes Secret with fsGroup)", path: key("secret.key", 0o440, os.Getgid()), warn: false},
		{name: "0640 foreign group", path: key("foreign.key", 0o640, foreignGID), warn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{Routes: []config.Route{{UpstreamTLS: config.UpstreamTLS{Key: tt.path}}}}
			got := KeyFileWarnings(cfg)
			if (len(got) == 1) != tt.warn {
				t.Fatalf("warnings = %q, want warning %v", got, tt.warn)
			}
			if tt.warn && !strings.Contains(got[0], "chmod 600 "+tt.path) {
				t.Errorf("warning %q does not give the fix", got[0])
			}
		})
	}
}
