package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/internal/testkit"
)

const nodeIdentityConfig = `listen:
  tls: ["127.0.0.1:0"]
  admin: "127.0.0.1:0"
routes:
  - name: registry
    sni: ["registry.test"]
    mode: bridge
    upstreams: [%q]
    health: {check: tcp}
    serve: {cert: serve.crt, key: serve.key%s}
    upstream_tls: {cert: edge.crt, key: edge.key, ca: ca.crt}
`

// nodeEcho sends one echo through the gateway as a node presenting cert
// (nil: none) and returns the first error: TLS 1.3 reports a refused
// client certificate on the first read.
func (w *world) nodeEcho(cert *tls.Certificate) error {
	cfg := &tls.Config{ServerName: "registry.test", RootCAs: w.ca.Pool()}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", w.addrs.TLS[0].String())
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := io.WriteString(c, "x"); err != nil {
		return err
	}
	_, err = io.ReadFull(c, make([]byte, 1))
	return err
}

// TestNodeIdentityFollowsFilesAndReloads: serve.client_ca and client_crl
// are built into the route and followed through a Secret ..data swap (a
// CRL that revokes the node refuses its next handshake), the refusal is
// counted by reason, and a reload that takes client_ca off the route lets
// nodes in without a certificate and drops the route's failure series.
func TestNodeIdentityFollowsFilesAndReloads(t *testing.T) {
	w := newWorld(t, "")
	up := startEcho(t, w.leaf("registry.test"), w.ca.Pool())
	_, err := w.ca.WriteLeaf(w.dir, "serve", "registry.test", "registry.test")
	must(t, err)
	nodes, err := pki.NewAuthority("cluster CA")
	must(t, err)
	node, err := nodes.Issue(pki.CommonName("system:node:w1"), pki.Organization("system:nodes"), pki.ExtKeyUsage(x509.ExtKeyUsageClientAuth))
	must(t, err)
	empty, err := nodes.CRL(1)
	must(t, err)
	secret := newSecretDir(t, filepath.Join(w.dir, "nodes"), map[string][]byte{"ca.crt": nodes.PEM, "nodes.crl": empty}, "ca.crt", "nodes.crl")
	auth := `, client_ca: nodes/ca.crt, client_names: ["system:node:*"], client_crl: nodes/nodes.crl`
	w.writeConfig(fmt.Sprintf(nodeIdentityConfig, up.addr(), auth))
	w.start()

	if err := w.nodeEcho(&node.Pair); err != nil {
		t.Fatalf("node with its certificate: %v", err)
	}
	if err := w.nodeEcho(nil); err == nil || !strings.Contains(err.Error(), "bad certificate") {
		t.Fatalf("node without a certificate: %v; want alert bad_certificate", err)
	}
	revoking, err := nodes.CRL(2, node.Cert)
	must(t, err)
	secret.swap(map[string][]byte{"ca.crt": nodes.PEM, "nodes.crl": revoking})
	w.logs.Wait(t, `msg="CRL reloaded" route=registry role=client_crl`)
	if err := w.nodeEcho(&node.Pair); err == nil || !strings.Contains(err.Error(), "bad certificate") {
		t.Fatalf("revoked node: %v; want alert bad_certificate", err)
	}
	// The node has its alert before the gateway has counted the refusal
	// (it counts once its side of the handshake has returned): wait for
	// the count, then read the others.
	var metrics string
	testkit.Poll(t, "the revoked refusal counted", func() bool {
		_, metrics = w.adminGet("/metrics")
		return strings.Contains(metrics, `snigate_client_auth_failures_total{reason="revoked",route="registry"} 1`)
	})
	for _, want := range []string{
		`snigate_client_auth_failures_total{reason="no_certificate",route="registry"} 1`,
		`snigate_client_auth_failures_total{reason="revoked",route="registry"} 1`,
		`snigate_client_auth_failures_total{reason="unknown_ca",route="registry"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	w.writeConfig(fmt.Sprintf(nodeIdentityConfig, up.addr(), ""))
	must(t, w.g.Reload(t.Context(), "test"))
	must(t, <-w.reloaded)
	if err := w.nodeEcho(nil); err != nil {
		t.Fatalf("after the reload without client_ca, a node without a certificate: %v", err)
	}
	if _, metrics := w.adminGet("/metrics"); strings.Contains(metrics, "snigate_client_auth_failures_total{") {
		t.Error("the route's client auth series outlived client_ca")
	}
}
