package config

// Defaults of the connection limits beside max_connections.
const (
	// DefaultMaxConnectionsPerClient is max_connections_per_client.
	DefaultMaxConnectionsPerClient = 256
	// DefaultMaxHandshakesCap caps the default of max_handshakes, which is
	// otherwise a quarter of max_connections (see DefaultMaxHandshakes).
	DefaultMaxHandshakesCap = 1024
)

// DefaultMaxHandshakes returns the default of max_handshakes for
// maxConnections: a quarter of it, at least 1 and at most
// DefaultMaxHandshakesCap.
func DefaultMaxHandshakes(maxConnections int) int {
	return min(DefaultMaxHandshakesCap, max(1, maxConnections/4))
}

// limits parses max_connections, max_connections_per_client and
// max_handshakes (at most max_connections).
func (p *parser) limits(top fields, c *Config) {
	c.MaxConnections = p.intAt(top, "max_connections", DefaultMaxConnections, 1)
	c.MaxConnectionsPerClient = p.intAt(top, "max_connections_per_client", DefaultMaxConnectionsPerClient, 0)
	c.MaxHandshakes = DefaultMaxHandshakes(c.MaxConnections)
	if n := top.get("max_handshakes"); n != nil {
		if i, ok := p.integer(n, top.key("max_handshakes"), 1, c.MaxConnections); ok {
			c.MaxHandshakes = i
		}
	}
}
