package sni

import (
	"crypto/tls"
	"github.com/snigate/snigate/internal/testkit"
	"io"
	"net"
	"strings"
	"testing"
)

// countLines counts the log lines holding every part.
func countLines(text string, parts ...string) int {
	n := 0
	for _, line := range strings.Split(text, "\n") {
		ok := line != ""
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			n++
		}
	}
	return n
}

// TestRefusalsAreCountedNotLoggedOneByOne is the regression test of a log
// flood: each refused connection wrote an Info line (253 MB of log in 30 s
// from one client at the cap, 5.6 MB in 10 s from a client outside
// listen.allow). Refusals are now logged rate-limited per result, with
// the count held back, while snigate_connections_total counts every one
// and a tunnel that was open keeps working.
func TestRefusalsAreCountedNotLoggedOneByOne(t *testing.T) {
	const attempts = 200
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	tests := []struct {
		name   string
		cfg    Config
		result string
		open   bool // a legitimate tunnel is open beside the attack
		held   bool // refusals are held in the tarpit, not closed at once
	}{
		{name: "outside listen.allow", cfg: Config{Allow: prefixes("10.0.0.0/8")}, result: resultDenied},
		{name: "at max_connections", cfg: Config{MaxConnections: 1}, result: resultLimit, open: true},
		{name: "at max_connections_per_client", cfg: Config{MaxConnectionsPerClient: 1}, result: resultClientLimit, open: true, held: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, tt.cfg, "", registryRoute(t, echoUpstream(t).addr))
			var open *net.TCPConn
			if tt.open {
				open = openTunnel(t, w, hello)
			}
			for i := range attempts {
				c := w.dial(t)
				c.Write(hello)
				if tt.held {
					testkit.Poll(t, "the refusal counted", func() bool {
						return w.counter(t, w.m.connections, w.addr, "", tt.result) == float64(i+1)
					})
				} else {
					io.Copy(io.Discard, c) // refused: closed (or reset) at once
				}
				c.Close()
			}
			if tt.open {
				echo(t, open, "still served")
			}
			w.srv.Close() // waits for every connection's log line
			<-w.served    // and for the accept loop, which refuses at the cap
			if got := w.counter(t, w.m.connections, w.addr, "", tt.result); got != attempts {
				t.Errorf("snigate_connections_total{result=%q} = %v, want %d", tt.result, got, attempts)
			}
			logs := w.logs.String()
			if n := countLines(logs, "msg=connection", "result="+tt.result); n < 1 || n > 2 {
				t.Errorf("%d connection lines for %d refusals, want 1 (2 if the attack outlasted the interval)", n, attempts)
			}
		})
	}
}
