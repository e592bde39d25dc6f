package doctor

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/nodeconfig"
	"github.com/snigate/snigate/internal/pki"
)

// TestDoctorNodeIdentity: a route that requires node identity
// (serve.client_ca). Without a client certificate the TLS 1.3 handshake
// completes and the refusal arrives on the first read, so the http step
// must read it as "give the node a certificate"; with the certificate
// named by node-config's hosts.toml (cert and key in one file, as the
// kubelet keeps it), every step passes.
func TestDoctorNodeIdentity(t *testing.T) {
	nodes, err := pki.NewAuthority("cluster CA")
	must(t, err)
	require := func(c *tls.Config) {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = nodes.Pool()
	}
	node, err := nodes.Issue(pki.CommonName("system:node:worker-1"))
	must(t, err)
	tests := []struct {
		name     string
		withCert bool
		wantOK   bool
		want     string
	}{
		{name: "no client certificate", want: "fix: the route requires node identity (serve.client_ca)"},
		{name: "hosts.toml names the node's certificate", withCert: true, wantOK: true, want: "; client certificate "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, require)
			cfg := w.config(w.name())
			cfg.CA = ""
			pem := filepath.Join(w.dir, "kubelet-client-current.pem")
			must(t, os.WriteFile(pem, append(append([]byte{}, node.CertPEM...), node.KeyPEM...), 0o600))
			host := nodeconfig.Host{Name: regName, Port: w.port, Route: "registry", CA: w.ca.PEM, ClientCert: tt.withCert}
			files, err := nodeconfig.Build(nodeconfig.Config{Hosts: []nodeconfig.Host{host}, ClientCert: pem}, nil)
			must(t, err)
			must(t, nodeconfig.Write(filepath.Dir(cfg.CertsDir), files))
			ok, lines, out := doctor(t, cfg)
			if ok != tt.wantOK || !strings.Contains(out, tt.want) {
				t.Fatalf("ok = %v, want %v; output lacks %q:\n%s", ok, tt.wantOK, tt.want, out)
			}
			if !tt.wantOK && !strings.HasPrefix(lines["http"], "FAIL") {
				t.Fatalf("http did not fail:\n%s", out)
			}
		})
	}
}
