package admin

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// guard refuses what a web browser can be made to send to the admin API,
// which has no authentication: a page on another site can POST to it (a
// form or fetch with a "simple" content type needs no preflight), and DNS
// rebinding lets a page read it under a host name of the attacker's.
//
//   - a request carrying Origin comes from a web page: 403;
//   - over TCP, a Host that is not an IP literal, localhost, or one of
//     hosts (the listen address's host name) was sent by a client that
//     reached us under another name: 421;
//
// and the runtime API's POST wants Content-Type application/json (see
// readState): a browser cannot send that cross-site without a CORS
// preflight, which is never answered.
//
// Unix socket connections skip the Host check: no browser reaches them.
func guard(h http.Handler, hosts func() []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Origin") != "":
			writeError(w, http.StatusForbidden, "requests from a web page (with an Origin header) are refused: the admin API is for snigate ctl, curl and Prometheus")
		case overTCP(r) && !hostAllowed(r.Host, hosts()):
			writeError(w, http.StatusMisdirectedRequest, fmt.Sprintf("Host %q is not this admin listener: use its IP address, localhost or the host name of listen.admin", r.Host))
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// overTCP reports whether r came on a TCP connection (not a unix socket).
func overTCP(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return !ok || a.Network() != "unix"
}

// hostAllowed reports whether the Host header names this listener: an IP
// literal, localhost (or a name under .localhost), or one of hosts. An
// empty Host (HTTP/1.0) names nothing else and is allowed.
func hostAllowed(host string, hosts []string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	for _, h := range hosts {
		if strings.EqualFold(strings.TrimSuffix(h, "."), host) {
			return true
		}
	}
	return false
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// ListenHost is the host name part of a listen.admin address, for
// Config.Hosts: "" for a unix socket, an IP literal or no host.
func ListenHost(addr string) string {
	if strings.HasPrefix(addr, UnixPrefix) {
		return ""
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	return host
}
