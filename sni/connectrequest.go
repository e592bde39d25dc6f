package sni

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/snigate/snigate/names"
)

// Bounds of what the CONNECT listener reads before it answers.
const (
	// MaxConnectRequestBytes bounds a CONNECT request's head: the request
	// line and the header fields, blank line included. A larger head is
	// answered 400.
	MaxConnectRequestBytes = 8 << 10
	// maxConnectHeaders bounds the number of header fields.
	maxConnectHeaders = 100
)

// connectRequest is a parsed HTTP request head from the CONNECT listener.
type connectRequest struct {
	Method string // as received: "CONNECT", "GET"...
	Target string // the request-target, as received
	Proto  string // "HTTP/1.1" or "HTTP/1.0"
	// For a well-formed authority-form target (CONNECT host:port):
	Host string // canonical DNS name, or the IP literal without brackets
	IP   bool   // Host is an IP literal (never routed)
	Port int
}

// requestError is a request the CONNECT listener answers with an HTTP
// error: Status, and Reason saying what was wrong (the response body and
// the log line).
type requestError struct {
	Status int
	Reason string
}

func (e *requestError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Reason)
}

func badRequest(format string, args ...any) *requestError {
	return &requestError{Status: http.StatusBadRequest, Reason: fmt.Sprintf(format, args...)}
}

// readConnectRequest reads one HTTP request head from r and parses it.
// buf holds the bytes already received (a PROXY header's leftover; nil is
// fine); it grows up to MaxConnectRequestBytes. It returns every byte
// received and the length of the head: raw[n:] is what the client sent
// after the head (the start of its ClientHello, if it did not wait for the
// 200). Errors: a *requestError (answer it), an unexpected PROXY header,
// or r's error wrapped with how much arrived. r's deadline is the
// caller's business.
func readConnectRequest(r io.Reader, buf []byte) (req *connectRequest, raw []byte, n int, err error) {
	raw = buf
	var rerr error
	for searched := 0; ; {
		if err := firstBytesProblem(raw); err != nil {
			return nil, raw, 0, err
		}
		if end := headEnd(raw, searched); end > 0 {
			req, err := parseConnectRequest(raw[:end])
			return req, raw, end, err
		}
		switch {
		case rerr != nil:
			return nil, raw, 0, requestIncomplete(len(raw), rerr)
		case len(raw) >= MaxConnectRequestBytes:
			return nil, raw, 0, badRequest("request head larger than %d bytes", MaxConnectRequestBytes)
		case len(raw) == cap(raw):
			raw = growBytes(raw, min(max(2*cap(raw), 512), MaxConnectRequestBytes))
		}
		searched = max(0, len(raw)-3)
		var m int
		m, rerr = r.Read(raw[len(raw):min(cap(raw), MaxConnectRequestBytes)])
		raw = raw[:len(raw)+m]
	}
}

func growBytes(b []byte, c int) []byte {
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}

// firstBytesProblem recognises the two classic mistakes early: TLS sent
// straight to the CONNECT port, and a PROXY header from an untrusted
// source.
func firstBytesProblem(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == recordTypeHandshake:
		return badRequest("received a TLS ClientHello: this is an HTTP CONNECT proxy port; " +
			"use an http:// proxy URL (HTTPS_PROXY=http://HOST:PORT), or connect to the TLS port directly without a proxy")
	case isProxyHeaderStart(b):
		return errUnexpectedProxyHeader
	}
	return nil
}

func requestIncomplete(have int, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if have == 0 {
		return fmt.Errorf("no request received: %w", err)
	}
	return fmt.Errorf("request head incomplete after %d bytes: %w", have, err)
}

// headEnd returns the length of the head in b (through the blank line
// that ends it, CRLF or bare LF), or 0 when it is not complete. The search
// starts at from.
func headEnd(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return 0
		}
		i += j
		switch {
		case i+1 < len(b) && b[i+1] == '\n':
			return i + 2
		case i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n':
			return i + 3
		}
	}
	return 0
}

// parseConnectRequest parses a complete request head strictly: one
// request line with single spaces, HTTP/1.0 or 1.1, header fields as
// "name: value" (no folding, no control bytes), no request body. The
// method is checked by the caller (405); the target is parsed only for
// CONNECT.
func parseConnectRequest(head []byte) (*connectRequest, error) {
	lines := strings.Split(string(head), "\n")
	lines = lines[:len(lines)-2] // the blank line, and what follows its LF
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	req, err := parseRequestLine(lines[0])
	if err != nil {
		return nil, err
	}
	if err := checkHeaders(lines[1:]); err != nil {
		return nil, err
	}
	if req.Method != http.MethodConnect {
		return req, nil
	}
	if err := req.parseAuthority(); err != nil {
		return nil, err
	}
	return req, nil
}

func parseRequestLine(line string) (*connectRequest, error) {
	parts := strings.Split(line, " ")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return nil, badRequest("malformed request line %q: want \"CONNECT host:port HTTP/1.1\"", printableString(line))
	}
	req := &connectRequest{Method: parts[0], Target: parts[1], Proto: parts[2]}
	if !isToken(req.Method) {
		return nil, badRequest("malformed method %q", printableString(req.Method))
	}
	if req.Proto != "HTTP/1.1" && req.Proto != "HTTP/1.0" {
		return nil, badRequest("protocol %q: want HTTP/1.1 or HTTP/1.0", printableString(req.Proto))
	}
	if !isVisibleASCII(req.Target) {
		return nil, badRequest("request target %q contains bytes that are not visible ASCII", printableString(req.Target))
	}
	return req, nil
}

// checkHeaders validates the header fields and refuses a request body.
func checkHeaders(lines []string) error {
	if len(lines) > maxConnectHeaders {
		return badRequest("%d header fields: at most %d are accepted", len(lines), maxConnectHeaders)
	}
	hosts := 0
	for _, line := range lines {
		if line != "" && (line[0] == ' ' || line[0] == '\t') {
			return badRequest("folded header line %q: obsolete line folding is not accepted", printableString(line))
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !isToken(name) {
			return badRequest("malformed header line %q: want \"Name: value\"", printableString(line))
		}
		if !isFieldValue(value) {
			return badRequest("header %s has control bytes in its value", name)
		}
		value = strings.Trim(value, " \t")
		if err := checkBodyHeader(name, value); err != nil {
			return err
		}
		if strings.EqualFold(name, "Host") {
			if hosts++; hosts > 1 || !validHostHeader(value) {
				return badRequest("Host header %q: want one host[:port]", printableString(value))
			}
		}
	}
	return nil
}

// validHostHeader reports whether v has only the bytes a Host header may
// carry (a reg-name, an IP literal, a port).
func validHostHeader(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!$%&'()*+,-.:;=[]_~", c) >= 0) {
			return false
		}
	}
	return true
}

// checkBodyHeader refuses a request body: a CONNECT request has none, and
// a body would be mistaken for the start of the tunnel.
func checkBodyHeader(name, value string) error {
	switch {
	case strings.EqualFold(name, "Transfer-Encoding"):
		return badRequest("Transfer-Encoding %q: a CONNECT request has no body", printableString(value))
	case strings.EqualFold(name, "Content-Length") && value != "0":
		return badRequest("Content-Length %q: a CONNECT request has no body", printableString(value))
	}
	return nil
}

// parseAuthority splits an authority-form target (host:port, or
// [IPv6]:port) into Host, IP and Port.
func (req *connectRequest) parseAuthority() error {
	host, port, err := splitAuthority(req.Target)
	if err != nil {
		return badRequest("CONNECT target %q: %v; want host:port, such as registry.example.com:443", printableString(req.Target), err)
	}
	req.Port = port
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return badRequest("CONNECT target %q: an IPv6 zone is not accepted", printableString(req.Target))
		}
		req.Host, req.IP = ip.String(), true
		return nil
	}
	if err := names.CheckHost(host); err != nil {
		return badRequest("CONNECT target %q: host %q is not a DNS name: %v", printableString(req.Target), printableString(host), err)
	}
	req.Host = names.Canonical(host)
	return nil
}

func splitAuthority(target string) (string, int, error) {
	i := strings.LastIndexByte(target, ':')
	if i < 0 {
		return "", 0, errors.New("no port")
	}
	host, ps := target[:i], target[i+1:]
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return "", 0, errors.New("unterminated IPv6 literal")
		}
		host = host[1 : len(host)-1]
		if _, err := netip.ParseAddr(host); err != nil || !strings.Contains(host, ":") {
			return "", 0, errors.New("malformed IPv6 literal")
		}
	} else if strings.ContainsAny(host, ":[]/@") {
		return "", 0, errors.New("not an authority")
	}
	if host == "" {
		return "", 0, errors.New("empty host")
	}
	port, err := parsePort(ps)
	if err != nil {
		return "", 0, err
	}
	return host, port, nil
}

func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("port %q is not a number", s)
	}
	p, _ := strconv.Atoi(s)
	if p < 1 || p > 65535 {
		return 0, fmt.Errorf("port %d is out of range", p)
	}
	return p, nil
}

// isToken reports whether s is a non-empty HTTP token (RFC 9110 5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func isVisibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// isFieldValue reports whether s holds no control byte other than HTAB
// (obs-text, 0x80 and above, is tolerated as RFC 9110 allows).
func isFieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// printableString bounds s and replaces bytes outside printable ASCII, so
// that it is safe to echo in a response body and a log line.
func printableString(s string) string {
	if len(s) > maxRequestLineLog {
		s = s[:maxRequestLineLog]
	}
	return printable([]byte(s))
}
