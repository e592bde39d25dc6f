package sni

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/testkit"
)

// Regression (issue 14 item 2): a minting route signed a leaf for every
// new name under its wildcard that any client asked for, after dialing
// the upstream for it. A flood of 1,000 distinct names from one client
// address now mints at most the burst (plus the rate while the flood
// lasts), the rest are refused before any dial; another client still
// gets its names, and the flooding client still gets names already
// minted.
func TestBridgeMintFloodIsRateLimited(t *testing.T) {
	p := newBridgePKI(t)
	dir := t.TempDir()
	if err := certs.InitCA(certs.InitCAConfig{Dir: dir, Names: []string{registryName}}); err != nil {
		t.Fatal(err)
	}
	minter := newRegistryMinter(t, dir)
	up := newCountingUpstream(t, p.upstreamConfig("h2"))
	r := p.route(t, up.addr)
	r.SNI, r.Serve, r.UpstreamTLS.ServerName = []string{"*." + registryName}, minter, registryName
	w := newWorld(t, Config{}, "", r)
	node := func(name string) *tls.Config {
		return &tls.Config{ServerName: name, RootCAs: caPool(t, dir), NextProtos: []string{"h2"}}
	}
	const other = "127.0.0.2"
	if _, err := pingFrom(t, w, node("first."+registryName), other); err != nil {
		t.Fatal(err) // teaches the route the upstream's ALPN answer
	}

	const flood = 1000
	start := time.Now()
	minted, refused := floodNewNames(t, w, node, flood)
	budget := certs.DefaultMintBurst + int(certs.DefaultMintRate*time.Since(start).Seconds()) + 1
	if minted > budget || minted < certs.DefaultMintBurst {
		t.Errorf("flood of %d new names from one client: %d minted, want %d to %d (burst, then the rate)", flood, minted, certs.DefaultMintBurst, budget)
	}
	testkit.Poll(t, "the refusals counted", func() bool { return w.result(t, "registry", resultMintLimit) == float64(refused) })
	if n := up.accepted.Load(); n != 1 {
		t.Errorf("the upstream accepted %d connections during the flood, want only the first node's", n)
	}

	st, err := pingFrom(t, w, node("other."+registryName), other)
	if err != nil {
		t.Fatalf("another client during the flood: %v", err)
	}
	if got := st.PeerCertificates[0].DNSNames; len(got) != 1 || got[0] != "other."+registryName {
		t.Errorf("another client got a certificate for %v", got)
	}
	if _, err := ping(t, w, node("n0."+registryName)); err != nil {
		t.Errorf("the flooding client, for a name already minted: %v", err)
	}
}

// newRegistryMinter mints names under *.registryName with the CA in dir.
func newRegistryMinter(t *testing.T, dir string) *certs.Minter {
	t.Helper()
	minter, err := certs.NewMinter(certs.MinterConfig{
		CACertFile: filepath.Join(dir, certs.CACertFileName), CAKeyFile: filepath.Join(dir, certs.CAKeyFileName),
		Route: "registry", Names: []string{"*." + registryName}, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return minter
}

// floodNewNames sends n hellos, each for a new name, and counts the
// answers: a handshake (minted) or an internal_error alert (refused).
func floodNewNames(t *testing.T, w *world, node func(string) *tls.Config, n int) (minted, refused int) {
	t.Helper()
	for i := range n {
		c := w.dial(t)
		c.Write(captureHello(t, node(fmt.Sprintf("n%d.%s", i, registryName))))
		switch typ, payload := firstRecord(t, c); {
		case typ == recordTypeHandshake:
			minted++
		case typ == recordTypeAlert && payload[1] == alertInternalError:
			refused++
		default:
			t.Fatalf("hello %d: record type %d % x", i, typ, payload)
		}
		c.Close()
	}
	return minted, refused
}

func caPool(tb testing.TB, dir string) *x509.CertPool {
	tb.Helper()
	pem, err := os.ReadFile(filepath.Join(dir, certs.CACertFileName))
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		tb.Fatal("no CA certificate in " + dir)
	}
	return pool
}
