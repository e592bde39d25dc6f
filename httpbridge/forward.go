package httpbridge

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/net/http/httpguts"

	"github.com/snigate/snigate/oci"
)

// forwarder is the chain's last link: it sends an admitted request to
// the registry through the route's RoundTripper and streams the answer
// to the node. It is httputil.ReverseProxy's ServeHTTP with the hooks the
// bridge uses (rewrite, modifyResponse, errorHandler) and without what no
// registry exchange needs, so that a request costs one copy of the
// request and one header map: no protocol upgrade (a 101 answer is an
// upstream error), no CloseNotifier watch (the node's requests carry a
// context). What it keeps of ReverseProxy, in its order: hop-by-hop headers and
// those the Connection header names removed both ways, the node's
// forwarding headers dropped before rewrite, unparsable query parameters
// removed, `Te: trailers` kept, no User-Agent added, the body of a
// request with ContentLength 0 dropped, informational answers (103) passed
// on as they come (a client trace), the answer's trailers passed on,
// a streamed answer (no Content-Length, or text/event-stream) flushed
// after each write, and a body that fails mid-copy aborting the response
// with http.ErrAbortHandler.
type forwarder struct {
	transport      http.RoundTripper
	rewrite        func(in, out *http.Request)
	modifyResponse func(*http.Response) error
	errorHandler   func(http.ResponseWriter, *http.Request, error)
	logf           func(format string, args ...any)
}

// errUpgrade: the registry answered 101 Switching Protocols, which no
// request of the distribution API asks for.
var errUpgrade = errors.New("the registry switched protocols (101), which the bridge does not forward")

func (f *forwarder) ServeHTTP(w http.ResponseWriter, in *http.Request) {
	ctx, info := informational(in.Context(), w)
	out := f.outgoing(in, ctx)
	resp, err := f.transport.RoundTrip(out)
	info.end()
	if err != nil {
		f.errorHandler(w, out, err)
		return
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		_ = resp.Body.Close()
		f.errorHandler(w, out, errUpgrade)
		return
	}
	removeHopByHop(resp.Header)
	if err := f.modifyResponse(resp); err != nil {
		_ = resp.Body.Close()
		f.errorHandler(w, out, err)
		return
	}
	f.answer(w, resp)
}

// outgoing is the upstream request of in: a copy under ctx sharing in's
// body, with its own URL and the end-to-end headers, as rewrite leaves
// it.
func (f *forwarder) outgoing(in *http.Request, ctx context.Context) *http.Request {
	out := in.WithContext(ctx)
	u := *in.URL
	u.RawQuery = cleanQueryParams(u.RawQuery)
	out.URL = &u
	out.Header = endToEnd(in.Header)
	if httpguts.HeaderValuesContainsToken(in.Header["Te"], "trailers") {
		out.Header["Te"] = []string{"trailers"}
	}
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header["User-Agent"] = []string{""} // net/http adds none
	}
	if in.ContentLength == 0 {
		out.Body = nil // so that net/http may send a request again
	} else if out.Body != nil {
		out.Body = noClose{out.Body} // a failed attempt must not close the node's body
	}
	out.Close = false
	f.rewrite(in, out)
	return out
}

// informational is ctx with a client trace that passes the informational
// answers of a request under it to w as they come, until end is called
// (the final answer's headers are then w's): one allocation for the
// trace and its state, one for its hook.
func informational(ctx context.Context, w http.ResponseWriter) (context.Context, *infoTrace) {
	t := &infoTrace{w: w}
	t.trace.Got1xxResponse = t.got1xx
	return httptrace.WithClientTrace(ctx, &t.trace), t
}

// infoTrace passes informational answers to w until end.
type infoTrace struct {
	trace httptrace.ClientTrace
	w     http.ResponseWriter
	mu    sync.Mutex
	ended bool
}

func (t *infoTrace) got1xx(code int, header textproto.MIMEHeader) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil
	}
	h := t.w.Header()
	for k, vv := range header {
		h[k] = append(h[k], vv...)
	}
	t.w.WriteHeader(code)
	clear(h) // WriteHeader keeps an informational answer's headers
	return nil
}

// end stops the passing: the final answer is the caller's.
func (t *infoTrace) end() {
	t.mu.Lock()
	t.ended = true
	t.mu.Unlock()
}

// endToEnd is a copy of h without its hop-by-hop headers
// (oci.HopByHopHeaders, ReverseProxy's list, and those Connection names) and without the forwarding
// headers the node sent (the gateway sets its own).
func endToEnd(h http.Header) http.Header {
	named := h["Connection"]
	out := make(http.Header, len(h))
	for k, vv := range h {
		if oci.IsHopByHop(k) || oci.IsForwarding(k) || (len(named) > 0 && connectionNames(named, k)) {
			continue
		}
		out[k] = vv
	}
	return out
}

// connectionNames: the Connection header's values name the header k.
func connectionNames(connection []string, k string) bool {
	for _, f := range connection {
		for name := range strings.SplitSeq(f, ",") {
			if name = textproto.TrimString(name); name != "" && http.CanonicalHeaderKey(name) == k {
				return true
			}
		}
	}
	return false
}

// removeHopByHop removes the answer's hop-by-hop headers in place.
func removeHopByHop(h http.Header) {
	for _, f := range h["Connection"] {
		for name := range strings.SplitSeq(f, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range oci.HopByHopHeaders {
		delete(h, k)
	}
}

// answer writes resp to the node: its headers, the trailers it
// announces, and its body, streamed.
func (f *forwarder) answer(w http.ResponseWriter, resp *http.Response) {
	h := w.Header()
	for k, vv := range resp.Header {
		if len(h[k]) == 0 {
			h[k] = vv // the answer's header is the forwarder's: no copy
		} else {
			h[k] = append(h[k], vv...)
		}
	}
	announced := len(resp.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range resp.Trailer {
			keys = append(keys, k)
		}
		h.Add("Trailer", strings.Join(keys, ", "))
	}
	w.WriteHeader(resp.StatusCode)
	if err := f.copyBody(w, resp); err != nil {
		_ = resp.Body.Close()
		panic(http.ErrAbortHandler) // the node sees the response cut short, never a complete wrong one
	}
	_ = resp.Body.Close() // now, so that resp.Trailer is complete
	f.trailers(w, resp, announced)
}

// copyBody streams resp's body to w: into the node connection's own
// buffer when w reads from a reader (HTTP/1.1: no copy buffer), else
// through a pooled buffer, flushing after each write when the answer
// streams.
func (f *forwarder) copyBody(w http.ResponseWriter, resp *http.Response) error {
	var err error
	switch rf, ok := w.(io.ReaderFrom); {
	case streams(resp):
		_, err = copyThrough(flushWriter{w: w, rc: http.NewResponseController(w)}, resp.Body)
	case ok:
		_, err = rf.ReadFrom(resp.Body)
	default:
		_, err = copyThrough(w, resp.Body)
	}
	if err != nil {
		f.logf("httpbridge: copying the answer's body: %v", err)
	}
	return err
}

// streams: an answer without a length, or server-sent events, goes to
// the node as it comes.
func streams(resp *http.Response) bool {
	if resp.ContentLength == -1 {
		return true
	}
	ct := resp.Header.Get("Content-Type")
	if len(ct) < len("text/event-stream") || !strings.EqualFold(ct[:len("text/")], "text/") {
		return false // a registry's answers: parsed for nothing
	}
	base, _, _ := mime.ParseMediaType(ct)
	return base == "text/event-stream"
}

// flushWriter flushes after each write.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}

// trailers passes resp's trailers on: those it announced as trailers,
// the others with http.TrailerPrefix.
func (f *forwarder) trailers(w http.ResponseWriter, resp *http.Response, announced int) {
	if len(resp.Trailer) == 0 {
		return
	}
	if err := http.NewResponseController(w).Flush(); err != nil { // chunked, so no Content-Length is computed
		f.logf("httpbridge: flushing before trailers: %v", err)
	}
	h := w.Header()
	for k, vv := range resp.Trailer {
		if len(resp.Trailer) != announced {
			k = http.TrailerPrefix + k
		}
		h[k] = append(h[k], vv...)
	}
}

// noClose keeps the node's request body open when net/http closes the
// upstream request's.
type noClose struct{ io.Reader }

func (noClose) Close() error { return nil }

// cleanQueryParams removes what url.ParseQuery cannot read from a raw
// query (ReverseProxy's rule: a semicolon or a malformed escape re-encodes
// it), so the registry cannot read a parameter the policy did not.
func cleanQueryParams(s string) string {
	for i := 0; i < len(s); {
		switch s[i] {
		case ';':
			return reencode(s)
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return reencode(s)
			}
			i += 3
		default:
			i++
		}
	}
	return s
}

func reencode(s string) string {
	v, _ := url.ParseQuery(s)
	return v.Encode()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
