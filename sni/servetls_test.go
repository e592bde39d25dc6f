package sni

import (
	"crypto/tls"
	"github.com/snigate/snigate/internal/testkit"
	"net"
	"strings"
	"testing"
	"time"
)

// TestTicketKeysRotate: the client leg's ticket keys lasted crypto/tls's
// 7 days; they are now replaced every TicketKeyRotation, and a ticket
// resumes only while its key is among the TicketKeysKept newest.
func TestTicketKeysRotate(t *testing.T) {
	ca := newPKI(t, "ticket test CA")
	leaf := ca.leaf(t, registryName)
	srv := &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12}
	k := &ticketKeys{every: TicketKeyRotation}
	t0 := time.Now()
	cache := tls.NewLRUClientSessionCache(4)
	client := &tls.Config{ServerName: registryName, RootCAs: ca.pool, ClientSessionCache: cache}
	k.rotate(srv, t0)
	if resumed := handshakePipe(t, srv, client); resumed {
		t.Fatal("first handshake resumed")
	}
	k.rotate(srv, t0.Add(TicketKeyRotation/2)) // not due: same key
	if len(k.keys) != 1 {
		t.Fatalf("%d keys after a rotation that was not due, want 1", len(k.keys))
	}
	// The ticket of the first handshake, kept in a cache of its own.
	old := tls.NewLRUClientSessionCache(1)
	state, _ := cache.Get(registryName)
	old.Put(registryName, state)
	oldClient := client.Clone()
	oldClient.ClientSessionCache = old
	for i := 1; i < TicketKeysKept; i++ {
		k.rotate(srv, t0.Add(time.Duration(i)*TicketKeyRotation))
	}
	if len(k.keys) != TicketKeysKept {
		t.Fatalf("%d keys, want %d", len(k.keys), TicketKeysKept)
	}
	if !handshakePipe(t, srv, oldClient) {
		t.Fatal("a ticket whose key is still kept did not resume")
	}
	old.Put(registryName, state)
	k.rotate(srv, t0.Add(time.Duration(TicketKeysKept)*TicketKeyRotation))
	if len(k.keys) != TicketKeysKept {
		t.Fatalf("%d keys after one more rotation, want %d", len(k.keys), TicketKeysKept)
	}
	if handshakePipe(t, srv, oldClient) {
		t.Fatalf("a ticket resumed %v after it was issued, beyond %d keys of %v", time.Duration(TicketKeysKept)*TicketKeyRotation, TicketKeysKept, TicketKeyRotation)
	}
}

// handshakePipe runs one handshake of client against srv and reports
// whether it resumed. The client reads once so that TLS 1.3 tickets,
// sent after the handshake, reach its cache.
func handshakePipe(t *testing.T, srv, client *tls.Config) bool {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	done := make(chan error, 1)
	go func() {
		s := tls.Server(a, srv)
		if err := s.Handshake(); err != nil {
			done <- err
			return
		}
		_, err := s.Write([]byte("x"))
		done <- err
	}()
	c := tls.Client(b, client)
	if err := c.Handshake(); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("server: %v", err)
	}
	return c.ConnectionState().DidResume
}

// TestServeConfigDefaults: the client leg offered crypto/tls's default
// TLS 1.2 suites, AES-CBC included; it now accepts AEAD suites only,
// TLS 1.2 at least, unless the route says otherwise.
func TestServeConfigDefaults(t *testing.T) {
	r := &Route{Serve: testkit.StaticCert{}}
	cfg := r.serveConfig("h2")
	if cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("MinVersion %x, want TLS 1.2", cfg.MinVersion)
	}
	for _, id := range cfg.CipherSuites {
		name := tls.CipherSuiteName(id)
		for _, cs := range tls.CipherSuites() {
			if cs.ID == id && cs.Insecure {
				t.Errorf("insecure suite %s offered", name)
			}
		}
		if !isAEAD(id) {
			t.Errorf("non-AEAD suite %s offered", name)
		}
	}
	r = &Route{Serve: testkit.StaticCert{}, ServeMinVersion: tls.VersionTLS13, ServeCipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}}
	if cfg := r.serveConfig(""); cfg.MinVersion != tls.VersionTLS13 || len(cfg.CipherSuites) != 1 || cfg.NextProtos != nil {
		t.Errorf("route settings not applied: %+v", cfg)
	}
}

func isAEAD(id uint16) bool {
	name := tls.CipherSuiteName(id)
	return strings.Contains(name, "_GCM_") || strings.Contains(name, "CHACHA20_POLY1305")
}
