package e2e

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nodeTLS is what a node that trusts the gateway's CA and presents kp
// (nil: no certificate) offers on the nodes route.
func (w *world) nodeTLS(t *testing.T, kp *keyPair) *tls.Config {
	t.Helper()
	cfg := w.gatewayTLS(t, nodeHost)
	if kp != nil {
		pair, err := tls.LoadX509KeyPair(kp.certFile, kp.keyFile)
		if err != nil {
			t.Fatal(err)
		}
		// Sent whatever the gateway asks for, as a node holding one
		// certificate does.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	return cfg
}

// nodeGet sends GET /v2/ on the nodes route from the node on a new
// connection; TLS 1.3 reports a refused certificate on the first read.
func (w *world) nodeGet(cfg *tls.Config) (int, bool, error) {
	conn, err := tlsDialIn(w.node, bastionAddr+":443", cfg)
	if err != nil {
		return 0, false, err
	}
	defer conn.Close()
	status, _, err := roundTrip(conn, "https://"+nodeHost+"/v2/")
	if err != nil {
		// The request can race the gateway's alert (a write to a closed
		// socket); the alert is still there to read.
		if _, rerr := conn.Read(make([]byte, 1)); rerr != nil && strings.Contains(rerr.Error(), "bad certificate") {
			err = rerr
		}
	}
	return status, conn.ConnectionState().DidResume, err
}

// refusal is a "client certificate refused" line of the gateway's log.
type refusal struct {
	Msg     string `json:"msg"`
	Route   string `json:"route"`
	Reason  string `json:"reason"`
	Resumed bool   `json:"resumed"`
	Node    string `json:"node"`
	Result  string `json:"result"`
}

// logLines returns the gateway's JSON log lines as refusals.
func (w *world) logLines(t *testing.T) []refusal {
	t.Helper()
	f, err := os.Open(w.gw.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []refusal
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r refusal
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// waitLog waits until the gateway's log has a line that match accepts.
func (w *world) waitLog(t *testing.T, what string, match func(refusal) bool) {
	t.Helper()
	err := poll(pollTries, pollStep, func() error {
		for _, l := range w.logLines(t) {
			if match(l) {
				return nil
			}
		}
		return fmt.Errorf("no log line with %s", what)
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, w.gw.proc.tail(20))
	}
}

func (w *world) waitRefusal(t *testing.T, reason string, resumed bool) {
	t.Helper()
	w.waitLog(t, "reason="+reason, func(l refusal) bool {
		return l.Msg == "client certificate refused on a route with serve.client_ca" && l.Route == "nodes" &&
			l.Reason == reason && (l.Resumed || !resumed)
	})
}

// TestNodeIdentityPulls: on a route with serve.client_ca, a node with its
// kubelet-style certificate pulls with skopeo and with containerd (client
// in hosts.toml, the kubelet's combined PEM), and the connection log names
// the node.
func TestNodeIdentityPulls(t *testing.T) {
	w := getWorld(t)
	t.Run("skopeo with the node certificate", func(t *testing.T) {
		dir, err := certsDir(t.TempDir(), "certs", filepath.Join(w.gatewayCerts, "ca.crt"), &w.nodes.worker1)
		if err != nil {
			t.Fatal(err)
		}
		w.mustPullSkopeo(t, nodeHost, dir)
	})
	t.Run("ctr with client in hosts.toml", func(t *testing.T) {
		hosts := filepath.Join(t.TempDir(), "certs.d")
		d := filepath.Join(hosts, nodeHost)
		must(t, os.MkdirAll(d, 0o755))
		toml := hostsTOMLWithClient(nodeHost, filepath.Join(w.gatewayCerts, "ca.crt"), w.nodes.worker1PEM)
		must(t, os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(toml), 0o644))
		ref := imageRef(nodeHost)
		runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
		r := runCmd(w.ctrd.ctr(w.node, "images", "pull", "--hosts-dir", hosts, ref))
		if r.err != nil {
			t.Fatalf("ctr pull failed:\n%s\n--- hosts.toml\n%s", r, toml)
		}
		got, err := w.ctrd.imageDigest(w.node, ref)
		if err != nil {
			t.Fatal(err)
		}
		if want := w.image.digest.String(); got != want {
			t.Fatalf("containerd has %s at %s, pushed %s", ref, got, want)
		}
	})
	t.Run("the connection log names the node", func(t *testing.T) {
		w.waitLog(t, "node=system:node:worker-1", func(l refusal) bool {
			return l.Msg == "connection" && l.Route == "nodes" && l.Node == "system:node:worker-1" && l.Result == "ok"
		})
	})
	t.Run("the audit log names the node", func(t *testing.T) {
		rec := w.waitAudit(t, func(r auditRecord) bool { return r.Route == "nodes" && r.Kind == "manifest" && r.Status == 200 })
		if rec.Node != "system:node:worker-1" || !strings.HasPrefix(rec.Client, nodeAddr+":") {
			t.Errorf("audit record of the node's pull: node %q client %q, want system:node:worker-1 from %s", rec.Node, rec.Client, nodeAddr)
		}
	})
}

// TestNodeIdentityRefusals: a node without an acceptable certificate is
// refused within the TLS handshake, and the gateway says why.
func TestNodeIdentityRefusals(t *testing.T) {
	w := getWorld(t)
	tests := []struct {
		name   string
		kp     *keyPair
		reason string
	}{
		{"no certificate", nil, "no_certificate"},
		{"a certificate from another CA", &w.nodes.otherCA, "unknown_ca"},
		{"an identity outside client_names", &w.nodes.kubeProxy, "name_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, err := w.nodeGet(w.nodeTLS(t, tt.kp))
			if err == nil || !strings.Contains(err.Error(), "bad certificate") {
				t.Fatalf("GET /v2/: status %d, err %v; want the handshake refused with alert bad_certificate", status, err)
			}
			w.waitRefusal(t, tt.reason, false)
		})
	}
	t.Run("skopeo without a certificate", func(t *testing.T) {
		_, r := w.pullSkopeo(t, nodeHost, w.gatewayCerts)
		if r.err == nil || !strings.Contains(r.out, "bad certificate") {
			t.Fatalf("pull without a node certificate: want remote error: tls: bad certificate:\n%s", r)
		}
	})
}

// TestNodeIdentityRevocation: revoking a node's certificate with openssl
// ca and writing the CRL over client_crl refuses its new connections
// within a few seconds, and its resumed sessions too.
func TestNodeIdentityRevocation(t *testing.T) {
	w := getWorld(t)
	resuming := w.nodeTLS(t, &w.nodes.worker2)
	resuming.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	for i, want := range []bool{false, true} {
		status, resumed, err := w.nodeGet(resuming)
		if err != nil || status != http.StatusOK || resumed != want {
			t.Fatalf("before revocation, connection %d: status %d, resumed %v (want %v), err %v", i+1, status, resumed, want, err)
		}
	}
	must(t, w.nodes.revoke(w.nodes.worker2))
	fresh := w.nodeTLS(t, &w.nodes.worker2)
	err := poll(pollTries, pollStep, func() error {
		if _, _, err := w.nodeGet(fresh); err == nil || !strings.Contains(err.Error(), "bad certificate") {
			return fmt.Errorf("a new connection of the revoked node: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, w.gw.proc.tail(20))
	}
	w.waitRefusal(t, "revoked", false)
	if _, _, err := w.nodeGet(resuming); err == nil || !strings.Contains(err.Error(), "bad certificate") {
		t.Fatalf("a resumed session of the revoked node: %v; want alert bad_certificate", err)
	}
	w.waitRefusal(t, "revoked", true)
	if status, _, err := w.nodeGet(w.nodeTLS(t, &w.nodes.worker1)); err != nil || status != http.StatusOK {
		t.Fatalf("another node after the revocation: status %d, err %v; want 200", status, err)
	}
	_, metrics, err := w.gw.admin("/metrics")
	must(t, err)
	if want := `snigate_client_auth_failures_total{reason="revoked",route="nodes"}`; !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
