package sni

import (
	"crypto/tls"
	"errors"
	"github.com/snigate/snigate/internal/testkit"
	"strings"
	"testing"
)

// refusingSource serves a static certificate but refuses, before the handshake,
// names starting with "bad." (with err) as a minter does.
type refusingSource struct {
	testkit.StaticCert
	err error
}

func (s refusingSource) CheckName(hello *tls.ClientHelloInfo) error {
	if strings.HasPrefix(hello.ServerName, "bad.") {
		return s.err
	}
	return nil
}

// tempError is a rate limit as the minter reports it.
type tempError struct{}

func (tempError) Error() string   { return "certs: this client asks for new certificate names too fast" }
func (tempError) Temporary() bool { return true }

// Regression (issue 14 item 2): a ClientHello the bridge was going to
// refuse (TLS 1.0 only, no AEAD suite, a name the minter will not sign)
// still cost an upstream handshake, dialed from GetConfigForClient before
// crypto/tls looked at versions, suites or the certificate. Each is now
// refused with its alert before anything is dialed, counted by result,
// and a legitimate node on the same route still gets through.
func TestBridgeRefusesBeforeDialing(t *testing.T) {
	p := newBridgePKI(t)
	tests := []struct {
		name      string
		client    func(*tls.Config)
		serveMin  uint16
		sourceErr error
		alert     byte
		result    string
		logHas    string
	}{
		{name: "TLS 1.0 only", client: func(c *tls.Config) { c.MinVersion, c.MaxVersion = tls.VersionTLS10, tls.VersionTLS10 },
			alert: alertProtocolVersion, result: resultTLSVersion, logHas: "client offers [TLS 1.0]"},
		{name: "TLS 1.1 only", client: func(c *tls.Config) { c.MinVersion, c.MaxVersion = tls.VersionTLS11, tls.VersionTLS11 },
			alert: alertProtocolVersion, result: resultTLSVersion},
		{name: "TLS 1.2 only, route serves TLS 1.3", client: func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }, serveMin: tls.VersionTLS13,
			alert: alertProtocolVersion, result: resultTLSVersion, logHas: "serves TLS 1.3 to TLS 1.3"},
		{name: "TLS 1.2 with AES-CBC suites only", client: func(c *tls.Config) {
			c.MaxVersion = tls.VersionTLS12
			c.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA}
		}, alert: alertHandshakeFailure, result: resultNoCipher, logHas: "none of the TLS 1.2 cipher suites"},
		{name: "name the certificate source refuses", client: func(c *tls.Config) { c.ServerName = "bad.registry.example.com" },
			sourceErr: errors.New("certs: route \"registry\" mints only for [registry.example.com]"),
			alert:     alertUnrecognizedName, result: resultNameRefused, logHas: "mints only for"},
		{name: "client over its minting rate", client: func(c *tls.Config) { c.ServerName = "bad.registry.example.com" },
			sourceErr: tempError{}, alert: alertInternalError, result: resultMintLimit, logHas: "too fast"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newCountingUpstream(t, p.upstreamConfig("h2"))
			r := p.route(t, up.addr)
			r.SNI = []string{registryName, "*." + registryName}
			r.UpstreamTLS.ServerName = registryName
			r.ServeMinVersion = tt.serveMin
			r.Serve = refusingSource{testkit.StaticCert{Cert: &p.serveCert}, tt.sourceErr}
			w := newWorld(t, Config{}, "", r)
			cfg := p.nodeConfig("h2")
			tt.client(cfg)
			c := w.dial(t)
			c.Write(captureHello(t, cfg))
			typ, payload := firstRecord(t, c)
			if typ != recordTypeAlert || len(payload) != 2 || payload[0] != alertLevelFatal || payload[1] != tt.alert {
				t.Fatalf("gateway answered record type %d (% x...), want a fatal alert %d", typ, payload[:min(len(payload), 8)], tt.alert)
			}
			w.logs.wait(t, "msg=connection", "result="+tt.result, tt.logHas)
			if n := up.accepted.Load(); n != 0 {
				t.Errorf("the upstream accepted %d connections for a refused hello, want 0", n)
			}
			if n := w.result(t, "registry", tt.result); n != 1 {
				t.Errorf("snigate_connections_total{result=%q} = %v, want 1", tt.result, n)
			}
			if tt.serveMin == 0 {
				if _, err := ping(t, w, p.nodeConfig("h2")); err != nil {
					t.Errorf("a legitimate node after the refusal: %v", err)
				}
			}
		})
	}
}

func TestServeVersion(t *testing.T) {
	tests := []struct {
		name     string
		min      uint16
		legacy   uint16
		versions []uint16
		want     uint16
		wantOK   bool
	}{
		{name: "TLS 1.3 client", legacy: tls.VersionTLS12, versions: []uint16{0x3a3a, tls.VersionTLS13, tls.VersionTLS12}, want: tls.VersionTLS13, wantOK: true},
		{name: "TLS 1.2 client, no supported_versions", legacy: tls.VersionTLS12, want: tls.VersionTLS12, wantOK: true},
		{name: "TLS 1.0 client", legacy: tls.VersionTLS10, want: tls.VersionTLS10},
		{name: "legacy 1.3 without supported_versions is 1.2", legacy: tls.VersionTLS13, want: tls.VersionTLS12, wantOK: true},
		{name: "supported_versions 1.1 and 1.0", legacy: tls.VersionTLS12, versions: []uint16{tls.VersionTLS11, tls.VersionTLS10}, want: tls.VersionTLS11},
		{name: "route minimum 1.3, client 1.2", min: tls.VersionTLS13, legacy: tls.VersionTLS12, versions: []uint16{tls.VersionTLS12}, want: tls.VersionTLS12},
		{name: "only GREASE and a future version", legacy: tls.VersionTLS12, versions: []uint16{0x0a0a, 0x0305}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Route{ServeMinVersion: tt.min}
			got, ok := r.serveVersion(&ClientHello{Version: tt.legacy, SupportedVersions: tt.versions})
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("serveVersion = %#04x, %v; want %#04x, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// The parser records the suites a real client offers, as crypto/tls sees
// them.
func TestClientHelloSuites(t *testing.T) {
	raw := captureHello(t, &tls.Config{ServerName: registryName, MaxVersion: tls.VersionTLS12,
		CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA}})
	hello, _, err := ReadClientHello(strings.NewReader(string(raw)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !hello.OffersSuite(tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA) {
		t.Error("the offered CBC suite is not recorded")
	}
	if hello.OffersSuite(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) || hello.OffersSuite(tls.TLS_AES_128_GCM_SHA256) {
		t.Error("a suite the client did not offer is recorded")
	}
}
