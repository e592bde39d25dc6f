package e2e

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

// TestBridgeNodeLegTLSHardened scans the bridge route's node leg with
// sslscan, as an auditor would: it offered AES-CBC suites (crypto/tls's
// TLS 1.2 default). Now it accepts TLS 1.2 and 1.3 only, AEAD suites only
// (Mozilla intermediate, HAProxy's Debian default).
func TestBridgeNodeLegTLSHardened(t *testing.T) {
	w := getWorld(t)
	out, err := w.node.command("sslscan", "--no-colour", "--no-heartbleed", "--no-fallback", "--no-renegotiation",
		"--no-compression", "--no-groups", "--show-sigs=no", "--sni-name="+registryHost, bastionAddr+":443").CombinedOutput()
	if err != nil {
		t.Fatalf("sslscan: %v\n%s", err, out)
	}
	protocols, suites := parseSSLScan(out)
	t.Logf("protocols %v, accepted suites %q", protocols, suites)
	for _, p := range []string{"SSLv2", "SSLv3", "TLSv1.0", "TLSv1.1"} {
		if protocols[p] {
			t.Errorf("%s is enabled on the bridge's node leg", p)
		}
	}
	if !protocols["TLSv1.2"] || !protocols["TLSv1.3"] {
		t.Errorf("want TLSv1.2 and TLSv1.3 enabled, sslscan found %v", protocols)
	}
	if len(suites) == 0 {
		t.Fatalf("sslscan listed no accepted cipher suite:\n%s", out)
	}
	for _, s := range suites {
		if !strings.Contains(s, "GCM") && !strings.Contains(s, "CHACHA20") {
			t.Errorf("non-AEAD suite accepted: %s", s)
		}
	}
}

// parseSSLScan reads sslscan's protocol table ("TLSv1.2   enabled") and
// its accepted suites ("Accepted  TLSv1.2  128 bits  ECDHE-ECDSA-AES128-GCM-SHA256").
func parseSSLScan(out []byte) (protocols map[string]bool, suites []string) {
	protocols = map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && (strings.HasPrefix(f[0], "TLSv") || strings.HasPrefix(f[0], "SSLv")):
			protocols[f[0]] = f[1] == "enabled"
		case len(f) >= 5 && (f[0] == "Accepted" || f[0] == "Preferred"):
			suites = append(suites, f[1]+" "+f[4])
		}
	}
	return protocols, suites
}
