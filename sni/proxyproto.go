package sni

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"

	"github.com/pires/go-proxyproto"
)

// PROXY protocol versions a route may send to its upstreams.
const (
	ProxyProtocolNone = ""
	ProxyProtocolV1   = "v1"
	ProxyProtocolV2   = "v2"
)

// proxyHeaderBufSize covers a v1 header (at most 107 bytes) in one read;
// v2 headers with TLVs are read through it with ReadByte and ReadFull.
const proxyHeaderBufSize = 256

// isProxyHeaderStart reports whether b starts like a PROXY v1 ("PROXY") or
// v2 (its 12-byte signature) header.
func isProxyHeaderStart(b []byte) bool {
	n := min(len(b), 5)
	return n == 5 && (bytes.Equal(b[:n], proxyproto.SIGV1[:n]) || bytes.Equal(b[:n], proxyproto.SIGV2[:n]))
}

// readProxyHeader reads the PROXY v1/v2 header a trusted front load
// balancer must send first. It returns the header and the bytes read past
// it (the start of the ClientHello). The caller sets the deadline.
func readProxyHeader(c net.Conn) (*proxyproto.Header, []byte, error) {
	br := bufio.NewReaderSize(c, proxyHeaderBufSize)
	h, err := proxyproto.Read(br)
	if errors.Is(err, proxyproto.ErrNoProxyProtocol) {
		return nil, nil, fmt.Errorf("connection from a listen.proxy_protocol_from source does not start with a PROXY v1/v2 header: %w", err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read PROXY header: %w", err)
	}
	rest, _ := br.Peek(br.Buffered())
	return h, rest, nil
}

// proxySource returns the client address a PROXY header carries, or nil for
// a LOCAL header (a health check from the load balancer itself).
func proxySource(h *proxyproto.Header) (src, dst net.Addr) {
	if h.Command.IsLocal() || h.SourceAddr == nil {
		return nil, nil
	}
	return h.SourceAddr, h.DestinationAddr
}

// formatProxyHeader returns the PROXY header of version ("v1" or "v2")
// that tells an upstream the original client and destination addresses.
func formatProxyHeader(version string, client, dest net.Addr) ([]byte, error) {
	v := byte(1)
	if version == ProxyProtocolV2 {
		v = 2
	}
	return proxyproto.HeaderProxyFromAddrs(v, client, dest).Format()
}
