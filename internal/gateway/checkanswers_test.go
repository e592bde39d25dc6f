package gateway

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/snigate/snigate/internal/pki"
)

// TestCheckProbeAnswers: `check --probe` with dns.answer_check checks each
// answer address once: a gateway answering a ClientHello for the first
// routed name is ok, one refusing is a warning that does not fail the
// probe.
func TestCheckProbeAnswers(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.NewAuthority("answers CA")
	must(t, err)
	cert, _, _, err := ca.Leaf("gw", "a.test")
	must(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	must(t, err)
	var wg sync.WaitGroup
	wg.Go(func() { serveHandshakes(ln) })
	defer func() { ln.Close(); wg.Wait() }()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	cfg := fmt.Sprintf(`listen:
  tls: ["127.0.0.1:0"]
dns:
  answer: ["127.0.0.1", "127.0.0.2"]
  answer_check: {port: %s}
routes:
  - name: a
    sni: [a.test]
    mode: splice
    upstreams: [%q]
`, port, ln.Addr().String())
	file := filepath.Join(dir, "snigate.yaml")
	must(t, os.WriteFile(file, []byte(cfg), 0o644))
	var out bytes.Buffer
	if err := Check(t.Context(), file, true, &out); err != nil {
		t.Fatalf("Check --probe: %v\n%s", err, &out)
	}
	for _, want := range []string{`(?m)^127\.0\.0\.1\s+` + port + `\s+ok\s+-$`, `(?m)^127\.0\.0\.2\s+` + port + `\s+warn\s+connect: .*refused$`} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("no line matching %s in:\n%s", want, &out)
		}
	}
}

// serveHandshakes completes a TLS handshake on each connection until ln
// closes.
func serveHandshakes(ln net.Listener) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Go(func() {
			defer c.Close()
			c.(*tls.Conn).Handshake() //nolint:errcheck // the probe stops after the ServerHello
			io.Copy(io.Discard, c)    //nolint:errcheck
		})
	}
}
