package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writePublicKey(t *testing.T, path string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVerifySection(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	writePublicKey(t, filepath.Join(dir, "cosign.pub"))
	writePublicKey(t, filepath.Join(dir, "other.pub"))
	tests := []struct {
		name, http string
		want       *Verify
	}{
		{name: "defaults", http: "    http: {verify: {cosign: {keys: [cosign.pub]}}}\n",
			want: &Verify{Mode: VerifyEnforce, CosignKeys: []string{filepath.Join(dir, "cosign.pub")}}},
		{name: "everything", http: `    http:
      verify:
        mode: audit
        repositories: ["team/**", base/os]
        cosign: {keys: [cosign.pub, ` + filepath.Join(dir, "other.pub") + `]}
`, want: &Verify{Mode: VerifyAudit, Repositories: []string{"team/**", "base/os"},
			CosignKeys: []string{filepath.Join(dir, "cosign.pub"), filepath.Join(dir, "other.pub")}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(filepath.Join(dir, "snigate.yaml"), []byte(minimalBridge+tc.http))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Routes[0].HTTP.Verify; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Verify = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestVerifySectionErrors(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	writePublicKey(t, filepath.Join(dir, "cosign.pub"))
	if err := os.WriteFile(filepath.Join(dir, "garbage.pub"), []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{name: "mode", yaml: minimalBridge + "    http: {verify: {mode: warn, cosign: {keys: [cosign.pub]}}}\n", want: []string{
			`snigate.yaml:10: routes[0].http.verify.mode: want one of enforce, audit, got "warn"`,
		}},
		{name: "no keys", yaml: minimalBridge + "    http: {verify: {mode: audit}}\n", want: []string{
			"snigate.yaml:10: routes[0].http.verify.cosign: required: cosign: {keys: [/etc/snigate/cosign.pub]}: the public keys whose signatures count",
		}},
		{name: "unreadable key", yaml: minimalBridge + "    http: {verify: {cosign: {keys: [missing.pub]}}}\n", want: []string{
			"snigate.yaml:10: routes[0].http.verify.cosign.keys[0]: cannot read missing.pub: no such file or directory",
		}},
		{name: "malformed key", yaml: minimalBridge + "    http: {verify: {cosign: {keys: [garbage.pub, serve.crt]}}}\n", want: []string{
			`snigate.yaml:10: routes[0].http.verify.cosign.keys[0]: garbage.pub is not a PEM public key`,
			`snigate.yaml:10: routes[0].http.verify.cosign.keys[1]: serve.crt is not a PEM public key`,
		}},
		{name: "repository pattern", yaml: minimalBridge + "    http: {verify: {repositories: [\"a/**/b\"], cosign: {keys: [cosign.pub]}}}\n", want: []string{
			`snigate.yaml:10: routes[0].http.verify.repositories[0]: "**" may only be the last segment`,
		}},
		{name: "unknown key", yaml: minimalBridge + "    http: {verify: {keys: [cosign.pub]}}\n", want: []string{
			"snigate.yaml:10: routes[0].http.verify.keys: unknown key; allowed here: mode, repositories, cosign, notation",
			"snigate.yaml:10: routes[0].http.verify.cosign: required",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseInDir(t, dir, tc.yaml)
			for i := range got {
				got[i] = strings.ReplaceAll(got[i], dir+"/", "")
			}
			ok := len(got) == len(tc.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.HasPrefix(got[i], tc.want[i])
			}
			if !ok {
				t.Errorf("errors:\n%s\nwant (prefixes):\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
