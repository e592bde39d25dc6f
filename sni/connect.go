package sni

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Results of the CONNECT listener, beside the TLS listener's.
const (
	resultBadRequest  = "bad_request"  // 400: malformed request
	resultBadMethod   = "bad_method"   // 405: a method other than CONNECT
	resultForbidden   = "forbidden"    // 403: host:port is not a route
	resultSNIMismatch = "sni_mismatch" // the tunnel's ClientHello names another host
)

// connectEstablished is the reply to an accepted CONNECT request.
const connectEstablished = "HTTP/1.1 200 Connection established\r\n\r\n"

// ServeConnect accepts HTTP CONNECT requests on ln (listen.connect) until
// Shutdown or Close, then returns ErrServerClosed. It shares everything
// with Serve — connection set, MaxConnections, Allow, ProxyProtocolFrom,
// metrics (listener label ln.Addr().String()) — and admits only
// "CONNECT host:port" where host is a routed name (exact or wildcard, not
// the default route, never an IP address) and port one of
// Config.ConnectPorts. It answers 200 once the route has an upstream to
// try (502 when it has none), then reads the tunnel's ClientHello as a TLS
// listener does, requires its server name to be host, and routes it the
// same way. Serve closes ln when it returns.
func (s *Server) ServeConnect(ln net.Listener) error { return s.serve(ln, kindConnect) }

// tunnelRequest reads the CONNECT request of a kindConnect session and
// answers it. On success the ClientHello comes next; otherwise the result
// says how the request was refused.
func (s *Server) tunnelRequest(ss *session) (string, error) {
	req, err := s.readRequest(ss)
	if err != nil {
		return s.requestFailed(ss, err)
	}
	if err := s.checkTarget(ss, req); err != nil {
		return s.requestFailed(ss, err)
	}
	if _, err := io.WriteString(ss.conn, connectEstablished); err != nil {
		return resultClientError, fmt.Errorf("send 200 to the CONNECT client: %w", err)
	}
	// The ClientHello gets its own timeouts.client_hello from the 200,
	// unless Shutdown has begun (it set a past deadline to end reads).
	ss.conn.SetDeadline(time.Now().Add(ss.cfg.ClientHelloTimeout))
	if s.closing.Load() {
		return resultShutdown, errors.New("server shutting down")
	}
	return "", nil
}

// readRequest reads the request head into the session's pooled buffer and
// keeps what followed it as the start of the ClientHello.
func (s *Server) readRequest(ss *session) (*connectRequest, error) {
	if ss.helloBuf == nil {
		ss.helloBuf = getHelloBuf()
		ss.raw = (*ss.helloBuf)[:0]
	}
	req, raw, n, err := readConnectRequest(ss.conn, ss.raw)
	if err != nil {
		ss.raw = ss.raw[:0]
		return nil, err
	}
	ss.raw = raw[:copy(raw, raw[n:])]
	return req, nil
}

// checkTarget applies the rules of the CONNECT listener to a parsed
// request: the method, the port, the routed name, a healthy upstream.
func (s *Server) checkTarget(ss *session, req *connectRequest) error {
	if req.Method != http.MethodConnect {
		return &requestError{Status: http.StatusMethodNotAllowed,
			Reason: fmt.Sprintf("method %s: this listener only tunnels CONNECT requests to the gateway's routes; it is not a forward HTTP proxy", req.Method)}
	}
	forbidden := func(why string) error {
		return &requestError{Status: http.StatusForbidden, Reason: why}
	}
	ss.table = s.routes.Load()
	r, routed := ss.table.lookupName(req.Host)
	switch {
	case req.IP:
		return forbidden(fmt.Sprintf("%s is an IP address: only routed names are tunneled", req.Target))
	case !routed:
		return forbidden(fmt.Sprintf("%s is not in any route's sni", req.Host))
	case !slices.Contains(ss.cfg.ConnectPorts, req.Port):
		return forbidden(fmt.Sprintf("port %d is not a TLS listener port (%s)", req.Port, portList(ss.cfg.ConnectPorts)))
	case len(r.Pool.Candidates()) == 0:
		return &requestError{Status: http.StatusBadGateway,
			Reason: fmt.Sprintf("route %q: %v (every upstream is down, draining or in maintenance)", r.Name, ErrNoHealthyUpstream)}
	}
	ss.tunnelTo = req.Host
	return nil
}

func portList(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ", ")
}

// requestFailed answers a refused CONNECT request, logs a rate-limited
// Warn that says what to change, and returns the result.
func (s *Server) requestFailed(ss *session, err error) (string, error) {
	if res := ss.forcedResult(); res != "" {
		return res, err // closed by Shutdown or to make room: nothing to advise
	}
	var re *requestError
	if !errors.As(err, &re) {
		res := s.helloResult(err) // deadline, EOF, unexpected PROXY header
		if res == resultBadHello {
			res = resultBadRequest
		}
		if res != resultShutdown {
			s.warnf(res+"/connect", "CONNECT listener: no complete request received",
				"listener", ss.listener, "client", ss.clientString(), "err", err)
		}
		return res, err
	}
	s.replyAndDrain(ss, errorResponse(re))
	res := statusResult[re.Status]
	s.warnf(res+"/connect", connectListenerAdvice[res], "listener", ss.listener, "client", ss.clientString(), "err", re.Reason)
	return res, re
}

var statusResult = map[int]string{
	http.StatusBadRequest:       resultBadRequest,
	http.StatusForbidden:        resultForbidden,
	http.StatusMethodNotAllowed: resultBadMethod,
	http.StatusBadGateway:       resultNoUpstream,
}

var connectListenerAdvice = map[string]string{
	resultBadRequest: "malformed request on the CONNECT listener: clients must send \"CONNECT host:port HTTP/1.1\" (HTTPS_PROXY=http://HOST:PORT)",
	resultBadMethod:  "request other than CONNECT on the CONNECT listener: it only tunnels HTTPS to routed names; clients must use HTTPS_PROXY, not HTTP_PROXY",
	resultForbidden:  "CONNECT refused: the target is not a routed name on a TLS listener port; add the name to a route's sni, or exclude it from the client's proxy (NO_PROXY)",
	resultNoUpstream: "CONNECT refused with 502: the route has no healthy upstream (see `snigate ctl upstreams`)",
}

// errorResponse is the complete response to a refused request. The body
// says what was wrong; a 403 never lists the routes.
func errorResponse(re *requestError) []byte {
	body := "snigate: " + re.Reason + "\n"
	if re.Status == http.StatusForbidden {
		body = "snigate: this host:port is not routed by this gateway\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", re.Status, http.StatusText(re.Status))
	if re.Status == http.StatusMethodNotAllowed {
		b.WriteString("Allow: CONNECT\r\n")
	}
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	b.WriteString(body)
	return []byte(b.String())
}

// replyAndDrain sends resp, half-closes, then drains what the client sends
// until it closes or the deadline passes, so that the response is not
// lost to a reset.
func (s *Server) replyAndDrain(ss *session, resp []byte) {
	if _, err := ss.conn.Write(resp); err != nil {
		return
	}
	if cw, ok := ss.conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.CopyN(io.Discard, ss.conn, 64<<10)
}

// checkTunnelSNI refuses a tunnel whose ClientHello names another host
// than its CONNECT request (no smuggling of another name).
func (s *Server) checkTunnelSNI(ss *session) (string, error) {
	if ss.kind != kindConnect || CanonicalName(ss.hello.ServerName) == ss.tunnelTo {
		return "", nil
	}
	writeAlert(ss.conn, ss.hello.RecordVersion, alertAccessDenied)
	err := fmt.Errorf("the tunnel's ClientHello names %q, its CONNECT request %q", ss.hello.ServerName, ss.tunnelTo)
	s.warnf(resultSNIMismatch, "CONNECT tunnel closed: its TLS server name differs from the CONNECT host",
		"listener", ss.listener, "client", ss.clientString(), "sni", ss.hello.ServerName, "err", err)
	return resultSNIMismatch, err
}
