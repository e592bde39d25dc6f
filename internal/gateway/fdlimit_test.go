package gateway

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// TestFDLimitWarning: running out of descriptors was not foreseen; a limit
// below what max_connections needs is now named at start, with the fix.
func TestFDLimitWarning(t *testing.T) {
	if w := fdLimitWarning(1<<20, 20256, 10000); w != "" {
		t.Errorf("warned with a limit that suffices: %s", w)
	}
	w := fdLimitWarning(1024, 20256, 10000)
	for _, want := range []string{"limit is 1024", "below the 20256", "max_connections 10000", "LimitNOFILE=20256", "lower max_connections to 384"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q does not say %q", w, want)
		}
	}
}

// TestFDLimitWarningAtStart: the gateway logs the warning when the
// process's own limit is too low for its max_connections.
func TestFDLimitWarningAtStart(t *testing.T) {
	var lim syscall.Rlimit
	must(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	w := newWorld(t, fmt.Sprintf(`listen:
  tls: ["127.0.0.1:0"]
max_connections: %d
routes:
  - name: echo
    sni: ["echo.test"]
    mode: splice
    upstreams: ["127.0.0.1:9"]
`, lim.Cur))
	w.start()
	if !w.logs.Contains(`msg="file descriptor limit too low"`) {
		t.Errorf("no warning for max_connections %d with a limit of %d:\n%s", lim.Cur, lim.Cur, w.logs)
	}
}
