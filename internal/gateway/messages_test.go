package gateway

import (
	"bytes"
	"crypto/x509"
	"log/slog"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/pki"
)

// TestNotReadyText is issue 27 item 3: a process started by an upgrade
// (SIGUSR2) answered /readyz "not ready: starting" like any other while
// the previous process served; it now says it is taking over. A gateway
// that has been ready drains when it is not, whether or not /readyz was
// asked in between.
func TestNotReadyText(t *testing.T) {
	tests := []struct {
		name               string
		wasReady, tookOver bool
		want               string
	}{
		{name: "first start", want: "starting"},
		{name: "taking over by SIGUSR2", tookOver: true,
			want: "starting: taking over the listening sockets from the previous process (SIGUSR2 upgrade), which serves until this one is ready"},
		{name: "draining", wasReady: true, want: "draining"},
		{name: "draining after taking over", wasReady: true, tookOver: true, want: "draining"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := notReadyText(tt.wasReady, tt.tookOver); got != tt.want {
				t.Errorf("notReadyText = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestWarnClientIssuers is issue 27 item 3: a serve.client_ca file that
// changed to a CA whose extended key usage lacks clientAuth refused every
// node with reason wrong_usage, which blames the node's certificate. The
// reload now says the bundle is at fault.
func TestWarnClientIssuers(t *testing.T) {
	serverOnly, err := pki.NewAuthority("server only CA", pki.ExtKeyUsage(x509.ExtKeyUsageServerAuth))
	must(t, err)
	plain, err := pki.NewAuthority("node CA")
	must(t, err)
	tests := []struct {
		name string
		cas  []*x509.Certificate
		want string
	}{
		{name: "a CA without clientAuth", cas: []*x509.Certificate{serverOnly.Cert},
			want: `level=WARN msg="serve.client_ca can issue no client certificate: every node is refused until the bundle is fixed" route=registry file=/etc/snigate/nodes-ca/ca.crt why="\"CN=server only CA\" has an extended key usage without clientAuth"`},
		{name: "one CA of the bundle can issue", cas: []*x509.Certificate{serverOnly.Cert, plain.Cert}},
		{name: "a CA without extended key usage", cas: []*x509.Certificate{plain.Cert}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: withoutTime}))
			rc := &config.Route{Name: "registry", Serve: config.Serve{ClientCA: "/etc/snigate/nodes-ca/ca.crt"}}
			warnClientIssuers(log, rc, tt.cas)
			if got := strings.TrimSpace(buf.String()); got != tt.want {
				t.Errorf("log:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
