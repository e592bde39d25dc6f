package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestSkopeoPullsThroughBridge: the node pulls with no proxy setting; DNS
// sends it to the gateway, which bridges to a registry that demands the
// edge certificate the node does not have.
func TestSkopeoPullsThroughBridge(t *testing.T) {
	w := getWorld(t)
	w.mustPullSkopeo(t, registryHost, w.gatewayCerts)
}

// TestContainerdPullsThroughBridge: containerd's ctr, configured through
// certs.d/registry.example.test/hosts.toml trusting the gateway's CA.
func TestContainerdPullsThroughBridge(t *testing.T) {
	w := getWorld(t)
	ref := imageRef(registryHost)
	// A rerun (-count=2) must pull again, not find the image in the store.
	runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
	r := runCmd(w.ctrd.ctr(w.node, "images", "pull", "--hosts-dir", w.ctrd.hostsDir, ref))
	if r.err != nil {
		t.Fatalf("ctr pull failed:\n%s", r)
	}
	got, err := w.ctrd.imageDigest(w.node, ref)
	if err != nil {
		t.Fatal(err)
	}
	if want := w.image.digest.String(); got != want {
		t.Fatalf("containerd has %s at %s, pushed %s\n%s", ref, got, want, r)
	}
}

// TestBridgeServesGatewayCertificate looks at the TLS session a node gets
// on the bridge route: the gateway's certificate for the name asked, and
// the registry's answer behind it (GET /v2/ is 200 only with the edge
// certificate, which the gateway presents).
func TestBridgeServesGatewayCertificate(t *testing.T) {
	w := getWorld(t)
	conn, err := tlsDialIn(w.node, bastionAddr+":443", w.gatewayTLS(t, registryHost))
	if err != nil {
		t.Fatalf("TLS to the gateway as %s: %v", registryHost, err)
	}
	defer conn.Close()
	leaf := conn.ConnectionState().PeerCertificates[0]
	if err := leaf.VerifyHostname(registryHost); err != nil {
		t.Errorf("gateway certificate: %v", err)
	}
	if leaf.Issuer.CommonName == w.registryCA.cert.Subject.CommonName {
		t.Errorf("the node sees the registry's own certificate (issuer %q): not bridged", leaf.Issuer.CommonName)
	}
	status, _, err := roundTrip(conn, "https://"+registryHost+"/v2/")
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET /v2/ through the bridge: status %d, err %v; want 200", status, err)
	}
}

// TestSpliceRoute: a registry that needs no client certificate, reached
// through a splice route; TLS stays end to end, so the node trusts the
// mirror's own CA and sees the mirror's own certificate.
func TestSpliceRoute(t *testing.T) {
	w := getWorld(t)
	t.Run("skopeo pull", func(t *testing.T) {
		w.mustPullSkopeo(t, mirrorHost, w.mirrorCerts)
	})
	t.Run("the node sees the mirror's certificate", func(t *testing.T) {
		roots, err := certPool(w.mirrorCA.file)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := tlsDialIn(w.node, bastionAddr+":443", &tls.Config{ServerName: mirrorHost, RootCAs: roots})
		if err != nil {
			t.Fatalf("TLS to the gateway as %s, trusting only the mirror's CA: %v", mirrorHost, err)
		}
		defer conn.Close()
		got := conn.ConnectionState().PeerCertificates[0].Issuer.CommonName
		if want := w.mirrorCA.cert.Subject.CommonName; got != want {
			t.Fatalf("certificate issued by %q, want the mirror's CA %q", got, want)
		}
	})
}

// TestUnroutedNameFails: only configured routes are reachable.
func TestUnroutedNameFails(t *testing.T) {
	w := getWorld(t)
	t.Run("skopeo cannot resolve it", func(t *testing.T) {
		r := runCmd(skopeo(w.node, "inspect", "--cert-dir", w.gatewayCerts, "docker://"+imageRef(unroutedHost)))
		if r.err == nil {
			t.Fatalf("inspect of an unrouted name succeeded:\n%s", r)
		}
		if !strings.Contains(r.out, "lookup "+unroutedHost) {
			t.Fatalf("want a failed lookup of %s:\n%s", unroutedHost, r)
		}
	})
	t.Run("resolved by hand, the gateway refuses its SNI", func(t *testing.T) {
		cfg := w.gatewayTLS(t, unroutedHost)
		conn, err := tlsDialIn(w.node, bastionAddr+":443", cfg)
		if err == nil {
			conn.Close()
			t.Fatalf("TLS with SNI %s: handshake succeeded", unroutedHost)
		}
		if !strings.Contains(err.Error(), "unrecognized name") {
			t.Fatalf("TLS with SNI %s: %v; want alert unrecognized_name (112)", unroutedHost, err)
		}
	})
}

// TestUntrustedClientFails: a node that does not trust the gateway's CA
// gets an x509 error, never a silent success.
func TestUntrustedClientFails(t *testing.T) {
	w := getWorld(t)
	t.Run("skopeo", func(t *testing.T) {
		_, r := w.pullSkopeo(t, registryHost, w.emptyCerts)
		if r.err == nil {
			t.Fatalf("pull without trusting the gateway's CA succeeded:\n%s", r)
		}
		if !strings.Contains(r.out, "x509: certificate signed by unknown authority") {
			t.Fatalf("want x509: certificate signed by unknown authority:\n%s", r)
		}
	})
	t.Run("ctr without hosts.toml", func(t *testing.T) {
		r := runCmd(w.ctrd.ctr(w.node, "images", "pull", imageRef(registryHost)))
		if r.err == nil {
			t.Fatalf("ctr pull without trusting the gateway's CA succeeded:\n%s", r)
		}
		if !strings.Contains(r.out, "x509: certificate signed by unknown authority") {
			t.Fatalf("want x509: certificate signed by unknown authority:\n%s", r)
		}
	})
	t.Run("Go client with the system roots", func(t *testing.T) {
		conn, err := tlsDialIn(w.node, bastionAddr+":443", &tls.Config{ServerName: registryHost})
		if err == nil {
			conn.Close()
			t.Fatal("handshake succeeded with the system roots")
		}
		var ua x509.UnknownAuthorityError
		if !errors.As(err, &ua) {
			t.Fatalf("got %v (%T), want x509.UnknownAuthorityError", err, err)
		}
	})
}

// TestConnectProxy: a node that uses HTTPS_PROXY reaches the same routes
// through the CONNECT listener.
func TestConnectProxy(t *testing.T) {
	w := getWorld(t)
	if w.gw.connectSkip != "" {
		t.Skipf("snigate check rejects listen.connect as unsupported (the CONNECT listener is not built yet):\n%s", w.gw.connectSkip)
	}
	before, err := w.gw.connectionsOn(connectPort)
	if err != nil {
		t.Fatal(err)
	}
	proxy := fmt.Sprintf("http://%s:%d", bastionAddr, connectPort)
	w.mustPullSkopeo(t, registryHost, w.gatewayCerts, "HTTPS_PROXY="+proxy, "https_proxy="+proxy)
	after, err := w.gw.connectionsOn(connectPort)
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Fatalf("the gateway logged no connection on its CONNECT listener (:%d) during the pull (%d before, %d after)",
			connectPort, before, after)
	}
}
