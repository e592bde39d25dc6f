package config

import (
	"path/filepath"
	"testing"
)

func TestParseLimits(t *testing.T) {
	tests := []struct {
		name            string
		yaml            string
		perClient, hand int
	}{
		{name: "defaults", yaml: "", perClient: DefaultMaxConnectionsPerClient, hand: DefaultMaxHandshakesCap},
		{name: "a quarter of max_connections", yaml: "max_connections: 400\n", perClient: DefaultMaxConnectionsPerClient, hand: 100},
		{name: "at least one", yaml: "max_connections: 2\n", perClient: DefaultMaxConnectionsPerClient, hand: 1},
		{name: "set", yaml: "max_connections: 400\nmax_connections_per_client: 16\nmax_handshakes: 400\n", perClient: 16, hand: 400},
		{name: "per client 0 is no limit", yaml: "max_connections_per_client: 0\n", perClient: 0, hand: DefaultMaxHandshakesCap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(filepath.Join(t.TempDir(), "snigate.yaml"), []byte(minimalSplice+tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if c.MaxConnectionsPerClient != tt.perClient || c.MaxHandshakes != tt.hand {
				t.Errorf("max_connections_per_client %d, max_handshakes %d; want %d, %d",
					c.MaxConnectionsPerClient, c.MaxHandshakes, tt.perClient, tt.hand)
			}
		})
	}
}
