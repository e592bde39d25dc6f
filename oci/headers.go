package oci

import (
	"net/http"
	"net/netip"
	"strings"
)

// HopByHopHeaders are the headers of one connection, never copied from
// one message to another (RFC 9110 section 7.6.1; Proxy-Authorization
// and Proxy-Authenticate are the proxy's own as well).
var HopByHopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// IsHopByHop reports whether the canonical header name k is one of
// HopByHopHeaders.
func IsHopByHop(k string) bool {
	for _, h := range HopByHopHeaders {
		if k == h {
			return true
		}
	}
	return false
}

// forwardingHeaders are dropped from every upstream request, whatever
// routes[].http.forwarded says: a node cannot claim another address to a
// registry (or a front before it) that trusts any of the usual client
// address headers. Every X-Forwarded-* and X-Original-Forwarded-* header
// goes as well (X-Forwarded-Host, -Port, -Server, ...). Names are
// compared with "_" read as "-": servers that map headers to CGI
// variables (HTTP_X_FORWARDED_FOR) read both alike.
var forwardingHeaders = map[string]bool{
	"Forwarded": true, "X-Real-Ip": true, "True-Client-Ip": true, "X-Client-Ip": true,
	"Client-Ip": true, "X-Cluster-Client-Ip": true, "Cf-Connecting-Ip": true, "Cf-Connecting-Ipv6": true,
	"Fastly-Client-Ip": true, "X-Originating-Ip": true, "X-Remote-Ip": true, "X-Remote-Addr": true,
	"X-Envoy-External-Address": true, "X-Proxyuser-Ip": true,
}

// forwardingPrefixes are the families of forwarding headers dropped whole.
var forwardingPrefixes = []string{"X-Forwarded-", "X-Original-Forwarded-"}

// DropForwarding removes every forwarding header (IsForwarding) from h.
func DropForwarding(h http.Header) {
	for k := range h {
		if IsForwarding(k) {
			delete(h, k)
		}
	}
}

// IsForwarding reports whether the header named k carries a client
// address or the original request's host, port or protocol.
func IsForwarding(k string) bool {
	k = http.CanonicalHeaderKey(strings.ReplaceAll(k, "_", "-"))
	if forwardingHeaders[k] {
		return true
	}
	for _, p := range forwardingPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// Forwarded is the headers that carry a node's address to the registry:
// X-Forwarded-For, X-Real-IP, X-Forwarded-Proto and Forwarded (RFC 7239,
// an IPv6 address quoted and bracketed), made once: the requests of one
// node connection share them.
type Forwarded struct {
	forFor, realIP, forwarded []string
}

// NewForwarded is the forwarding headers of ip; those of an invalid ip
// set nothing.
func NewForwarded(ip netip.Addr) Forwarded {
	if !ip.IsValid() {
		return Forwarded{}
	}
	s := ip.String()
	node := s
	if ip.Is6() {
		node = `"[` + s + `]"`
	}
	return Forwarded{forFor: []string{s}, realIP: []string{s}, forwarded: []string{"for=" + node + ";proto=https"}}
}

// protoHTTPS is X-Forwarded-Proto's one value.
var protoHTTPS = []string{"https"}

// Set sets the headers on h. Their values are shared by every header f
// was set on: replace them (Header.Set, Add), never write into them.
func (f Forwarded) Set(h http.Header) {
	if f.forFor == nil {
		return
	}
	h["X-Forwarded-For"] = f.forFor[:1:1]
	h["X-Real-Ip"] = f.realIP[:1:1]
	h["X-Forwarded-Proto"] = protoHTTPS[:1:1]
	h["Forwarded"] = f.forwarded[:1:1]
}
