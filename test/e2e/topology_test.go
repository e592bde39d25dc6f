package e2e

import (
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestNodeHasNoRouteToRegistry proves the premise of every other test: the
// node reaches the registry only through the gateway.
func TestNodeHasNoRouteToRegistry(t *testing.T) {
	w := getWorld(t)
	tests := []struct {
		name    string
		from    *netns
		addr    string
		wantErr bool
	}{
		{"node to registry A fails", w.node, registryAAddr, true},
		{"node to registry B fails", w.node, registryBAddr, true},
		{"node to mirror fails", w.node, mirrorAddr, true},
		{"bastion to registry A works", w.bastion, registryAAddr, false},
		{"node to gateway works", w.node, bastionAddr + ":443", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.from.do(func() error {
				c, err := net.DialTimeout("tcp", tt.addr, 2*time.Second)
				if err == nil {
					c.Close()
				}
				return err
			})
			if (err != nil) != tt.wantErr {
				t.Fatalf("dial %s from %s: err = %v, want error: %v", tt.addr, tt.from.name, err, tt.wantErr)
			}
		})
	}
}

// TestRegistryRequiresEdgeCertificate proves that the registry refuses a
// client without the edge certificate, so that a pull through the bridge
// shows the gateway presenting it.
func TestRegistryRequiresEdgeCertificate(t *testing.T) {
	w := getWorld(t)
	roots, err := certPool(w.registryCA.file)
	if err != nil {
		t.Fatal(err)
	}
	edge, err := tls.LoadX509KeyPair(w.edge.certFile, w.edge.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		certs   []tls.Certificate
		wantErr bool
	}{
		{"without the edge certificate", nil, true},
		{"with the edge certificate", []tls.Certificate{edge}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &tls.Config{ServerName: registryHost, RootCAs: roots, Certificates: tt.certs}
			status, err := getV2(w.bastion, registryAAddr, cfg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("GET /v2/ on %s: status %d, err = %v, want error: %v", registryAAddr, status, err, tt.wantErr)
			}
			if err == nil && status != http.StatusOK {
				t.Fatalf("GET /v2/ on %s: status %d, want 200", registryAAddr, status)
			}
		})
	}
}

// getV2 sends GET /v2/ to addr over TLS from inside ns. With TLS 1.3 a
// refused client certificate shows as an error on the first read.
func getV2(ns *netns, addr string, cfg *tls.Config) (int, error) {
	conn, err := tlsDialIn(ns, addr, cfg)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	status, _, err := roundTrip(conn, "https://"+cfg.ServerName+"/v2/")
	return status, err
}
