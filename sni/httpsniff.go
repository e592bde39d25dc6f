package sni

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// httpMethods are the request methods recognised on a TLS port; "PRI" is
// the HTTP/2 prior-knowledge preface.
var httpMethods = []string{"GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE", "PRI"}

// maxRequestLineLog bounds the request line kept for logs and the reply.
const maxRequestLineLog = 200

// startsLikeHTTP reports whether b could start an HTTP request method.
func startsLikeHTTP(b []byte) bool {
	return len(b) > 0 && b[0] >= 'A' && b[0] <= 'Z'
}

// sniffHTTP returns a *PlainHTTPError when b starts with a known HTTP
// method followed by a space, else nil.
func sniffHTTP(b []byte) *PlainHTTPError {
	sp := bytes.IndexByte(b, ' ')
	if sp <= 0 {
		return nil
	}
	method := string(b[:sp])
	if !isHTTPMethod(method) {
		return nil
	}
	line := b
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, "\r")
	if len(line) > maxRequestLineLog {
		line = line[:maxRequestLineLog]
	}
	return &PlainHTTPError{Method: method, RequestLine: printable(line)}
}

func isHTTPMethod(m string) bool {
	for _, x := range httpMethods {
		if m == x {
			return true
		}
	}
	return false
}

// printable replaces bytes outside printable ASCII with '?', so that a
// request line is safe to echo in a response body.
func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		out[i] = c
	}
	return string(out)
}

// badRequestResponse is the complete HTTP/1.1 400 response sent to a
// client that spoke plain HTTP to the TLS port at listenPort, or inside a
// CONNECT tunnel to tunnelTo (""; not a tunnel). It names the mistake and
// the fix.
func badRequestResponse(e *PlainHTTPError, listenPort, tunnelTo string) []byte {
	body := badRequestBody(e, listenPort)
	if tunnelTo != "" {
		body = tunnelBadRequestBody(e, tunnelTo)
	}
	var b strings.Builder
	b.WriteString("HTTP/1.1 400 Bad Request\r\n")
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
	b.WriteString("Connection: close\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	b.WriteString(body)
	return []byte(b.String())
}

func badRequestBody(e *PlainHTTPError, port string) string {
	if e.Method == "CONNECT" {
		return fmt.Sprintf("This is snigate's TLS (SNI) port %s: it expects a TLS ClientHello, "+
			"but you sent an HTTP CONNECT request (%q).\n"+
			"This is the classic mistake of pointing HTTPS_PROXY (or https_proxy) at the TLS port.\n"+
			"Fix: unset HTTPS_PROXY for this name and connect with https://NAME:%s directly "+
			"(DNS sends the name to snigate; no proxy is needed), "+
			"or point HTTPS_PROXY at snigate's CONNECT listener (listen.connect) instead.\n",
			port, e.RequestLine, port)
	}
	return fmt.Sprintf("This is snigate's TLS (SNI) port %s: it expects a TLS ClientHello, "+
		"but you sent plain HTTP (%q).\n"+
		"Fix: use https://NAME:%s instead of http://, "+
		"or send proxied requests to snigate's CONNECT listener (listen.connect).\n",
		port, e.RequestLine, port)
}

// tunnelBadRequestBody explains plain HTTP sent inside a CONNECT tunnel:
// the tunnel carries TLS to the host it named, nothing else.
func tunnelBadRequestBody(e *PlainHTTPError, host string) string {
	return fmt.Sprintf("This CONNECT tunnel to %s expects TLS to %s (a TLS ClientHello for that name), "+
		"but you sent plain HTTP (%q) inside it.\n"+
		"Fix: use https://%s instead of http:// through the proxy; "+
		"snigate's CONNECT listener carries only TLS to the names it routes.\n",
		host, host, e.RequestLine, host)
}
