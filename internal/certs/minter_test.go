package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testCA is a CA made by InitCA in a temporary directory.
type testCA struct {
	dir  string
	pool *x509.CertPool
}

func newTestCA(t *testing.T, names ...string) *testCA {
	t.Helper()
	ca := &testCA{dir: t.TempDir()}
	ca.reinit(t, names...)
	return ca
}

// reinit replaces the CA in place (as `ca init --force` does).
func (ca *testCA) reinit(t *testing.T, names ...string) {
	t.Helper()
	if err := InitCA(InitCAConfig{Dir: ca.dir, Names: names, Force: true}); err != nil {
		t.Fatal(err)
	}
	ca.pool = x509.NewCertPool()
	ca.pool.AddCert(readCACert(t, ca.dir))
}

func (ca *testCA) config() MinterConfig {
	return MinterConfig{
		CACertFile: filepath.Join(ca.dir, CACertFileName), CAKeyFile: filepath.Join(ca.dir, CAKeyFileName),
		Route: "registry", PollInterval: testPollInterval, Logger: quietLogger,
	}
}

// mintCounter counts mints per name through MinterConfig.OnMintFunc.
type mintCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *mintCounter) hook(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
}

func (c *mintCounter) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

func hello(name string) *tls.ClientHelloInfo { return &tls.ClientHelloInfo{ServerName: name} }

func TestMinterNameConstraints(t *testing.T) {
	constrained := newTestCA(t, "registry.example.com", "mirror.internal")
	open := newTestCA(t)
	tests := []struct {
		name    string
		ca      *testCA
		sni     string
		wantSAN string // "" : refused
		wantErr error
		errHas  string
	}{
		{"the permitted name", constrained, "registry.example.com", "registry.example.com", nil, ""},
		{"one label below", constrained, "eu.registry.example.com", "eu.registry.example.com", nil, ""},
		{"case and trailing dot", constrained, "EU.Registry.Example.COM.", "eu.registry.example.com", nil, ""},
		{"second permitted name", constrained, "mirror.internal", "mirror.internal", nil, ""},
		{"two labels below", constrained, "a.eu.registry.example.com", "", ErrNameNotPermitted,
			"CA " + filepath.Join(constrained.dir, CACertFileName) + " is constrained to [registry.example.com mirror.internal]"},
		{"the parent", constrained, "example.com", "", ErrNameNotPermitted, "name example.com is outside them"},
		{"another site", constrained, "evil.test", "", ErrNameNotPermitted, "add it with snigate ca init --name evil.test"},
		{"suffix without a dot", constrained, "xregistry.example.com", "", ErrNameNotPermitted, "outside"},
		{"no SNI", constrained, "", "", ErrNoServerName, "no server name"},
		{"IP address", open, "192.0.2.1", "", nil, "IP address"},
		{"bad label", open, "a_b.-x.test", "", nil, "hyphen"},
		{"unconstrained CA, any name", open, "anything.example.org", "anything.example.org", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewMinter(tt.ca.config())
			if err != nil {
				t.Fatal(err)
			}
			c, err := m.GetCertificate(hello(tt.sni))
			if tt.wantSAN == "" {
				if err == nil {
					t.Fatalf("minted %q for %q; want a refusal", c.Leaf.DNSNames, tt.sni)
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("error %v; want errors.Is %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.errHas) {
					t.Errorf("error %q lacks %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertLeaf(t, c, tt.wantSAN, tt.ca.pool)
		})
	}
}

// assertLeaf checks a minted leaf's shape and that it verifies against
// roots for name.
func assertLeaf(t *testing.T, c *tls.Certificate, name string, roots *x509.CertPool) {
	t.Helper()
	l := c.Leaf
	switch {
	case len(l.DNSNames) != 1 || l.DNSNames[0] != name || l.Subject.CommonName != name:
		t.Errorf("SAN %q CN %q; want %q", l.DNSNames, l.Subject.CommonName, name)
	case l.KeyUsage != x509.KeyUsageDigitalSignature:
		t.Errorf("key usage %v; want digitalSignature only", l.KeyUsage)
	case len(l.ExtKeyUsage) != 1 || l.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth:
		t.Errorf("ext key usage %v; want serverAuth", l.ExtKeyUsage)
	case l.IsCA:
		t.Error("minted leaf is a CA")
	case !l.NotBefore.Before(time.Now()):
		t.Errorf("NotBefore %s is not in the past", l.NotBefore)
	}
	if _, err := l.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
		t.Errorf("leaf for %s does not verify against the CA: %v", name, err)
	}
}

// tlsServer serves TLS handshakes on 127.0.0.1:0 with getCert until the
// test ends.
func tlsServer(t *testing.T, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: getCert})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { acceptHandshakes(ln, &wg) })
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func acceptHandshakes(ln net.Listener, wg *sync.WaitGroup) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Go(func() { handshakeAndClose(c.(*tls.Conn)) })
	}
}

func handshakeAndClose(c *tls.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	if c.Handshake() == nil {
		c.Write([]byte("ok"))
	}
}

// dialVerify handshakes with addr as a node trusting only roots would.
func dialVerify(addr, name string, roots *x509.CertPool) (*x509.Certificate, error) {
	d := &tls.Dialer{Config: &tls.Config{ServerName: name, RootCAs: roots, MinVersion: tls.VersionTLS12}}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.(*tls.Conn).ConnectionState().PeerCertificates[0], nil
}

func TestMinterNames(t *testing.T) {
	ca := newTestCA(t)
	cfg := ca.config()
	cfg.Names = []string{"registry.example.com", "*.Mirror.Example.com"}
	m, err := NewMinter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sni string
		ok  bool
	}{
		{"registry.example.com", true},
		{"eu.mirror.example.com", true},
		{"mirror.example.com", false},
		{"a.eu.mirror.example.com", false},
		{"google.com", false},
	}
	for _, tt := range tests {
		t.Run(tt.sni, func(t *testing.T) {
			_, err := m.GetCertificate(hello(tt.sni))
			if tt.ok != (err == nil) {
				t.Fatalf("GetCertificate(%q) = %v; want ok=%v", tt.sni, err, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "mints only for [registry.example.com *.Mirror.Example.com]") {
				t.Errorf("error %q does not list the route's names", err)
			}
		})
	}
}

func TestMinterHandshake(t *testing.T) {
	ca := newTestCA(t, "registry.example.com")
	m, err := NewMinter(ca.config())
	if err != nil {
		t.Fatal(err)
	}
	addr := tlsServer(t, m.GetCertificate)
	tests := []struct {
		name, sni string
		ok        bool
	}{
		{"permitted name", "registry.example.com", true},
		{"one label below", "eu.registry.example.com", true},
		{"outside the constraints", "other.example.com", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leaf, err := dialVerify(addr, tt.sni, ca.pool)
			if tt.ok != (err == nil) {
				t.Fatalf("handshake for %s: %v; want ok=%v", tt.sni, err, tt.ok)
			}
			if tt.ok && leaf.DNSNames[0] != tt.sni {
				t.Errorf("peer leaf for %q", leaf.DNSNames)
			}
		})
	}
}

// 100 handshakes for a name not yet minted, all in flight before the mint
// may finish (the mint is held until the other 99 wait for it), get one
// certificate, minted once.
func TestMinterConcurrentFirstHandshakesMintOnce(t *testing.T) {
	const clients = 100
	ca := newTestCA(t, "registry.example.com")
	var mints mintCounter
	var joined atomic.Int32
	allJoined := make(chan struct{})
	cfg := ca.config()
	cfg.OnMintFunc = func(name string) {
		mints.hook(name)
		select {
		case <-allJoined:
		case <-time.After(waitLimit): // the count below reports it
		}
	}
	m, err := NewMinter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.joinHook = func(string) {
		if joined.Add(1) == clients-1 {
			close(allJoined)
		}
	}
	addr := tlsServer(t, m.GetCertificate)
	serials := make(chan string, clients)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			leaf, err := dialVerify(addr, "registry.example.com", ca.pool)
			if err != nil {
				errs <- err
				return
			}
			serials <- leaf.SerialNumber.String()
		})
	}
	wg.Wait()
	close(errs)
	close(serials)
	for err := range errs {
		t.Error(err)
	}
	distinct := map[string]bool{}
	for s := range serials {
		distinct[s] = true
	}
	if n := mints.count("registry.example.com"); n != 1 || len(distinct) != 1 {
		t.Errorf("%d mints, %d distinct certificates for %d concurrent first handshakes (%d joined a mint in flight); want 1 and 1",
			n, len(distinct), clients, joined.Load())
	}
}

// A mint blocked for one name must not hold up another name.
func TestMinterNamesDoNotBlockEachOther(t *testing.T) {
	ca := newTestCA(t, "registry.example.com")
	var mints mintCounter
	slowEntered, releaseSlow := make(chan struct{}), make(chan struct{})
	cfg := ca.config()
	cfg.OnMintFunc = func(name string) {
		mints.hook(name)
		if name == "slow.registry.example.com" {
			close(slowEntered)
			<-releaseSlow
		}
	}
	m, err := NewMinter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	slowDone := make(chan error, 1)
	go func() {
		_, err := m.GetCertificate(hello("slow.registry.example.com"))
		slowDone <- err
	}()
	<-slowEntered

	fast := make(chan error, 1)
	go func() {
		_, err := m.GetCertificate(hello("fast.registry.example.com"))
		fast <- err
	}()
	select {
	case err := <-fast:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLimit):
		t.Fatal("minting fast.registry.example.com waited for slow.registry.example.com")
	}
	close(releaseSlow)
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
	if a, b := mints.count("slow.registry.example.com"), mints.count("fast.registry.example.com"); a != 1 || b != 1 {
		t.Errorf("mints slow %d fast %d; want 1 each", a, b)
	}
}

// fakeClock is a settable clock for MinterConfig.Now.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// waitInflight waits for the mint in flight for name, if any.
func (m *Minter) waitInflight(name string) {
	m.mu.Lock()
	call := m.inflight[name]
	m.mu.Unlock()
	if call != nil {
		<-call.done
	}
}

func TestMinterRenewal(t *testing.T) {
	const name = "registry.example.com"
	ca := newTestCA(t, name)
	clock := newFakeClock(time.Now())
	var mints mintCounter
	renewing, releaseRenewal := make(chan struct{}), make(chan struct{})
	cfg := ca.config()
	cfg.Validity, cfg.RenewBefore, cfg.Now = time.Hour, 20*time.Minute, clock.Now
	cfg.OnMintFunc = func(n string) {
		mints.hook(n)
		if mints.count(n) == 2 { // the renewal
			close(renewing)
			<-releaseRenewal
		}
	}
	m, err := NewMinter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	first := mustGet(t, m, name)
	if got := mustGet(t, m, name); got != first {
		t.Fatal("second handshake before the renewal window got a new certificate")
	}

	clock.Advance(45 * time.Minute) // past NotAfter-RenewBefore (40m), before NotAfter (60m)
	if got := mustGet(t, m, name); got != first {
		t.Fatal("the handshake that triggered the renewal did not get the current certificate")
	}
	<-renewing
	if got := mustGet(t, m, name); got != first { // would block if renewal blocked handshakes
		t.Fatal("a handshake during the renewal did not get the current certificate")
	}
	close(releaseRenewal)
	m.waitInflight(name)
	renewed := mustGet(t, m, name)
	if renewed == first || !renewed.Leaf.NotAfter.After(first.Leaf.NotAfter) {
		t.Fatalf("after renewal: NotAfter %s (was %s); want a later certificate", renewed.Leaf.NotAfter, first.Leaf.NotAfter)
	}
	if n := mints.count(name); n != 2 {
		t.Errorf("%d mints; want 2", n)
	}

	clock.Advance(2 * time.Hour) // past NotAfter: an expired leaf is never served
	if got := mustGet(t, m, name); got == renewed || !clock.Now().Before(got.Leaf.NotAfter) {
		t.Fatalf("after expiry got NotAfter %s at %s", got.Leaf.NotAfter, clock.Now())
	}
}

func mustGet(t *testing.T, m *Minter, name string) *tls.Certificate {
	t.Helper()
	c, err := m.GetCertificate(hello(name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The background sweep renews leaves in use and drops the ones no one used.
func TestMinterSweep(t *testing.T) {
	ca := newTestCA(t, "registry.example.com")
	clock := newFakeClock(time.Now())
	cfg := ca.config()
	cfg.Validity, cfg.RenewBefore, cfg.Now = time.Hour, 20*time.Minute, clock.Now
	m, err := NewMinter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	used := mustGet(t, m, "a.registry.example.com")
	mustGet(t, m, "a.registry.example.com") // served from the cache: used
	mustGet(t, m, "b.registry.example.com") // minted, never served again

	clock.Advance(45 * time.Minute)
	m.sweep()
	m.waitInflight("a.registry.example.com")
	m.mu.Lock()
	a, b := m.leaves.peek("a.registry.example.com"), m.leaves.peek("b.registry.example.com")
	m.mu.Unlock()
	if a == nil || a.cert == used {
		t.Error("the sweep did not renew a leaf in use")
	}
	if b != nil {
		t.Error("the sweep kept a leaf due for renewal that no one used")
	}
}

// A changed CA (here `ca init --force` while Run watches it) drops every
// cached leaf: the next handshake gets a leaf of the new CA.
func TestMinterCAChangeDropsCache(t *testing.T) {
	const name = "registry.example.com"
	ca := newTestCA(t, name)
	changed := make(chan struct{}, 1)
	cfg := ca.config()
	cfg.OnCAChangeFunc = func() { changed <- struct{}{} }
	m, err := NewMinter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, m.Run)
	addr := tlsServer(t, m.GetCertificate)
	if _, err := dialVerify(addr, name, ca.pool); err != nil {
		t.Fatal(err)
	}
	oldPool := ca.pool
	ca.reinit(t, name)
	select {
	case <-changed:
	case <-time.After(waitLimit):
		t.Fatal("the minter did not notice the new CA")
	}
	if _, err := dialVerify(addr, name, ca.pool); err != nil {
		t.Fatalf("a node trusting the new CA: %v", err)
	}
	if _, err := dialVerify(addr, name, oldPool); err == nil {
		t.Fatal("a node trusting only the old CA still verifies: the cache was not dropped")
	}
}

func TestNewMinterErrors(t *testing.T) {
	ca := newTestCA(t)
	leafDir := t.TempDir()
	certA, keyA := testPair(t, 1) // self-signed, not a CA
	writeFile(t, filepath.Join(leafDir, "tls.crt"), certA)
	writeFile(t, filepath.Join(leafDir, "tls.key"), keyA)
	tests := []struct {
		name   string
		mutate func(*MinterConfig)
		want   string
	}{
		{"not a CA", func(c *MinterConfig) {
			c.CACertFile, c.CAKeyFile = filepath.Join(leafDir, "tls.crt"), filepath.Join(leafDir, "tls.key")
		}, "is not a CA certificate"},
		{"missing key", func(c *MinterConfig) { c.CAKeyFile = "" }, "want both serve.ca_cert and serve.ca_key"},
		{"renew before validity", func(c *MinterConfig) { c.Validity, c.RenewBefore = time.Hour, 2*time.Hour }, "must be shorter"},
		{"expired CA", func(c *MinterConfig) {
			c.Now = func() time.Time { return time.Now().AddDate(11, 0, 0) }
		}, "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ca.config()
			tt.mutate(&cfg)
			if _, err := NewMinter(cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewMinter = %v; want an error with %q", err, tt.want)
			}
		})
	}
}
