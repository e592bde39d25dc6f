package config

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/pki"
)

// nodePKI writes, next to the test PKI, nodes.crt (a node CA), other-ca.crt
// (another CA), nodes.crl (signed by the node CA) and other.crl (signed by
// the other CA).
func nodePKI(t *testing.T, dir string) {
	t.Helper()
	nodes, err := pki.NewAuthority("node CA")
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewAuthority("other CA")
	if err != nil {
		t.Fatal(err)
	}
	crl, err := nodes.CRL(1)
	if err != nil {
		t.Fatal(err)
	}
	otherCRL, err := other.CRL(1)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "nodes.crt"), nodes.PEM)
	writeFile(t, filepath.Join(dir, "other-ca.crt"), other.PEM)
	writeFile(t, filepath.Join(dir, "nodes.crl"), crl)
	writeFile(t, filepath.Join(dir, "other.crl"), otherCRL)
}

// withServe is minimalBridge with serve: (line 8) extended by extra.
func withServe(extra string) string {
	return strings.Replace(minimalBridge, "key: serve.key}", "key: serve.key, "+extra+"}", 1)
}

func TestClientAuthErrors(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	nodePKI(t, dir)
	tests := []errorCase{
		{name: "client_ca on a splice route", yaml: minimalSplice + "    serve:\n      client_ca: nodes.crt\n      client_names: [\"system:node:*\"]\n", want: []string{
			"snigate.yaml:9: routes[0].serve.client_ca: only allowed in bridge mode: a spliced connection is never terminated, so the gateway cannot ask the node for a certificate; use mode: bridge, or remove it",
			"snigate.yaml:10: routes[0].serve.client_names: only allowed in bridge mode: a spliced connection is never terminated, so the gateway cannot ask the node for a certificate; use mode: bridge, or remove it",
		}},
		{name: "client_ca missing", yaml: withServe("client_ca: missing.crt"), want: []string{
			"snigate.yaml:8: routes[0].serve.client_ca: cannot read missing.crt: no such file or directory",
		}},
		{name: "client_ca not PEM", yaml: withServe("client_ca: garbage.txt"), want: []string{
			"snigate.yaml:8: routes[0].serve.client_ca: no PEM certificate in garbage.txt",
		}},
		{name: "client_names and client_crl without client_ca", yaml: withServe(`client_names: ["system:node:*"], client_crl: nodes.crl`), want: []string{
			"snigate.yaml:8: routes[0].serve.client_names: requires client_ca: the bundle node certificates must chain to",
			"snigate.yaml:8: routes[0].serve.client_crl: requires client_ca: the bundle node certificates must chain to",
		}},
		{name: "bad name patterns", yaml: withServe(`client_ca: nodes.crt, client_names: ["*", "system:*:*", "system:node:*", "system:node:*", ""]`), want: []string{
			`snigate.yaml:8: routes[0].serve.client_names[0]: want an identity such as "system:node:*", got "*": "*" alone: leave client_names empty to accept any certificate that chains to client_ca`,
			`snigate.yaml:8: routes[0].serve.client_names[1]: want an identity such as "system:node:*", got "system:*:*": more than one "*": a pattern holds at most one, matching within one label or segment`,
			`snigate.yaml:8: routes[0].serve.client_names[3]: "system:node:*" is listed twice (first at line 8)`,
			`snigate.yaml:8: routes[0].serve.client_names[4]: want an identity such as "system:node:*", got "": empty pattern: want an identity such as "system:node:*"`,
		}},
		{name: "client_names not a list", yaml: withServe(`client_ca: nodes.crt, client_names: "system:node:*"`), want: []string{
			`snigate.yaml:8: routes[0].serve.client_names: want a list such as ["system:node:*"], got "system:node:*"`,
		}},
		{name: "client_crl missing", yaml: withServe("client_ca: nodes.crt, client_crl: missing.crl"), want: []string{
			"snigate.yaml:8: routes[0].serve.client_crl: cannot read missing.crl: no such file or directory",
		}},
		{name: "client_crl not a CRL", yaml: withServe("client_ca: nodes.crt, client_crl: nodes.crt"), want: []string{
			"snigate.yaml:8: routes[0].serve.client_crl: no PEM X509 CRL in nodes.crt (want -----BEGIN X509 CRL----- blocks, as openssl ca -gencrl writes)",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseInDir(t, dir, tc.yaml)
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestClientCRLSignedByAnotherCA(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	nodePKI(t, dir)
	got := parseInDir(t, dir, withServe("client_ca: nodes.crt, client_crl: other.crl"))
	if len(got) != 1 || !strings.HasPrefix(got[0], `snigate.yaml:8: routes[0].serve.client_crl: CRL 1 of other.crl (issuer "CN=other CA", updated `) ||
		!strings.HasSuffix(got[0], "is not signed by a certificate of client_ca nodes.crt") {
		t.Errorf("errors: %q; want one saying other.crl is not signed by client_ca", got)
	}
}

func TestClientAuthParsed(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	nodePKI(t, dir)
	cfg, err := Parse(filepath.Join(dir, "snigate.yaml"), []byte(withServe(`client_ca: nodes.crt, client_names: ["system:node:*", "spiffe://cluster.local/ns/*/sa/node"], client_crl: nodes.crl`)))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Routes[0].Serve
	if s.ClientCA != filepath.Join(dir, "nodes.crt") || s.ClientCRL != filepath.Join(dir, "nodes.crl") {
		t.Errorf("client_ca %q, client_crl %q: want absolute names in %s", s.ClientCA, s.ClientCRL, dir)
	}
	if want := []string{"system:node:*", "spiffe://cluster.local/ns/*/sa/node"}; !slices.Equal(s.ClientNames, want) {
		t.Errorf("client_names %q, want %q", s.ClientNames, want)
	}
}

// TestClientCRLFromCAWithoutCRLSign: kubeadm's cluster CA lacks cRLSign;
// a CRL under its name is refused with the reason, not as unsigned.
func TestClientCRLFromCAWithoutCRLSign(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	a, err := pki.NewAuthority("kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	crl, err := a.CRL(1)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := *a.Cert
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, &a.Key.PublicKey, a.Key)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "kubeadm-ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeFile(t, filepath.Join(dir, "kubeadm.crl"), crl)
	got := parseInDir(t, dir, withServe("client_ca: kubeadm-ca.crt, client_crl: kubeadm.crl"))
	want := `snigate.yaml:8: routes[0].serve.client_crl: CRL 1 of kubeadm.crl is issued by "CN=kubernetes" of client_ca, whose key usage lacks cRLSign: ` +
		"a CA that may not sign CRLs cannot revoke (kubeadm's cluster CA is one); narrow client_names instead, or use a node CA from snigate ca init"
	if len(got) != 1 || got[0] != want {
		t.Errorf("errors %q\nwant %q", got, want)
	}
}
