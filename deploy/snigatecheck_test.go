package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/pki"
)

// buildSnigate builds ../cmd/snigate from the gateway's module. Without
// SNIGATE_REQUIRE_E2E a tree that does not build yet skips the test (the
// gateway's own tests report that); with it, it fails.
func buildSnigate(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "snigate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/snigate")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("SNIGATE_REQUIRE_E2E") != "" {
			t.Fatalf("go build ./cmd/snigate: %v\n%s", err, out)
		}
		t.Skipf("go build ./cmd/snigate failed, skipping the real `snigate check`: %v\n%s", err, out)
	}
	return bin
}

// testPKI writes a CA, a serving pair for names and a client pair into dir.
type testPKI struct{ caCert, caKey, serveCert, serveKey, clientCert, clientKey string }

func newTestPKI(t *testing.T, dir string, names []string) testPKI {
	t.Helper()
	ca, err := pki.NewAuthority("snigate test CA")
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteCA(dir, "ca"); err != nil {
		t.Fatal(err)
	}
	p := testPKI{caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key")}
	serve, err := ca.Issue(pki.CommonName(names[0]), pki.SANs(names...))
	if err == nil {
		p.serveCert, p.serveKey, err = serve.Write(dir, "serve")
	}
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Issue(pki.CommonName("edge.example.test"))
	if err == nil {
		p.clientCert, p.clientKey, err = client.Write(dir, "client")
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// localCopy rewrites the configuration's certificate paths to test files.
func localCopy(t *testing.T, yamlText string, cfg *gatewayConfig) string {
	t.Helper()
	dir := t.TempDir()
	p := newTestPKI(t, dir, cfg.routedNames())
	repl := map[string]string{}
	for _, r := range cfg.Routes {
		if s := r.Serve; s != nil {
			repl[s.Cert], repl[s.Key], repl[s.CACert], repl[s.CAKey] = p.serveCert, p.serveKey, p.caCert, p.caKey
		}
		if u := r.UpstreamTLS; u != nil {
			repl[u.Cert], repl[u.Key], repl[u.CA] = p.clientCert, p.clientKey, p.caCert
		}
	}
	delete(repl, "")
	for from, to := range repl {
		yamlText = strings.ReplaceAll(yamlText, from, to)
	}
	file := filepath.Join(dir, "snigate.yaml")
	if err := os.WriteFile(file, []byte(yamlText), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestExampleConfigsPassSnigateCheck runs the real `snigate check` on every
// configuration this tree ships (certificate files replaced by test ones).
func TestExampleConfigsPassSnigateCheck(t *testing.T) {
	examples := map[string]string{bastionConfig: string(readFile(t, bastionConfig))}
	for _, dir := range kustomizationDirs(t) {
		b := buildKustomization(t, dir)
		for _, cm := range find[coreConfigMap](b) {
			if cm.Name == configMapName {
				examples[dir+" ConfigMap "+cm.Name] = cm.Data[configKey]
			}
		}
	}
	examples["README.md Quick start"] = quickStartYAML(t)
	bin := buildSnigate(t)
	for name, text := range examples {
		t.Run(name, func(t *testing.T) {
			cfg, err := parseGatewayConfig([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr strings.Builder
			cmd := exec.Command(bin, "check", "-c", localCopy(t, text, cfg))
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("snigate check: %v\n%s%s", err, &stdout, &stderr)
			}
			for _, bad := range []string{"open resolver", "presents the edge identity"} {
				// The Kubernetes examples leave who may connect to their
				// NetworkPolicy and the nodes' firewall, and are warned so.
				if strings.Contains(stderr.String(), bad) && !strings.HasPrefix(name, "kubernetes/") {
					t.Errorf("snigate check warns that the example is exposed:\n%s", &stderr)
				}
			}
		})
	}
}

// quickStartYAML is the configuration of the README's Quick start, which
// once made an open resolver (listen.dns on every address, dns.forward,
// no listen.allow).
func quickStartYAML(t *testing.T) string {
	t.Helper()
	_, after, ok := strings.Cut(string(readFile(t, "../README.md")), "## Quick start")
	m := yamlBlock.FindStringSubmatch(after)
	if !ok || m == nil {
		t.Fatal("README.md has no Quick start configuration")
	}
	return m[1]
}
