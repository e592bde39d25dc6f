package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/snigate/snigate/upstream"
)

// DefaultAddr is the admin address `snigate ctl` uses without --admin.
const DefaultAddr = "127.0.0.1:9090"

// DefaultClientTimeout bounds one request of a Client without HTTPClient.
const DefaultClientTimeout = 10 * time.Second

// maxResponseBytes bounds what a Client reads from one answer.
const maxResponseBytes = 16 << 20

// Client calls the runtime API of a running snigate, for `snigate ctl`.
// The zero value talks to DefaultAddr.
type Client struct {
	// Addr is the admin address in the forms of listen.admin: "host:port"
	// or "unix:/path"; a leading "http://" is ignored. "": DefaultAddr.
	Addr string
	// HTTPClient sends the requests. nil: a client that dials Addr (TCP or
	// unix socket), ignores proxy settings, keeps no idle connections and
	// gives up after DefaultClientTimeout. A non-nil client must reach Addr
	// itself: its transport decides where a request for a unix Addr goes.
	HTTPClient *http.Client
}

// APIError is an error answer of the admin API: the HTTP status and the
// message of its JSON body {"error": "..."}.
type APIError struct {
	StatusCode int
	Message    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.StatusCode)
}

// Upstreams returns the status of every upstream of every route.
func (c *Client) Upstreams(ctx context.Context) ([]upstream.Status, error) {
	var st []upstream.Status
	if err := c.do(ctx, http.MethodGet, "/api/upstreams", nil, &st); err != nil {
		return nil, err
	}
	return st, nil
}

// SetState sets the state of one upstream of a route and returns its new
// status. An unknown route or upstream is an *APIError with StatusCode 404.
func (c *Client) SetState(ctx context.Context, route, addr string, s upstream.State) (upstream.Status, error) {
	if route == "" || addr == "" {
		return upstream.Status{}, errors.New("set upstream state: want a route name and an upstream host:port, as `snigate ctl upstreams` lists them")
	}
	body, err := json.Marshal(stateRequest{State: (*string)(&s)})
	if err != nil {
		return upstream.Status{}, err
	}
	path := "/api/upstreams/" + url.PathEscape(route) + "/" + url.PathEscape(addr)
	var st upstream.Status
	if err := c.do(ctx, http.MethodPost, path, bytes.NewReader(body), &st); err != nil {
		return upstream.Status{}, err
	}
	return st, nil
}

// do sends one request and decodes a 200 answer into out.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader, out any) error {
	return c.doAccepting(ctx, method, path, body, out)
}

// doAccepting sends one request and decodes into out a 200 answer, or an
// answer with one of the other codes in accept (whose body has out's
// shape, not {"error": ...}).
func (c *Client) doAccepting(ctx context.Context, method, path string, body io.Reader, out any, accept ...int) error {
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL()+path, body)
	if err != nil {
		return fmt.Errorf("admin API request %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return c.reachError(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("admin API at %s: read the answer to %s %s: %w", c.addr(), method, path, err)
	}
	if resp.StatusCode != http.StatusOK && !slices.Contains(accept, resp.StatusCode) {
		return c.apiError(resp, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("admin API at %s: decode the answer to %s %s: %w; is this snigate's admin listener?", c.addr(), method, path, err)
	}
	return nil
}

// apiError turns an error answer into an *APIError, keeping the server's
// message, or the start of the body when it is not the API's JSON.
func (c *Client) apiError(resp *http.Response, data []byte) error {
	var eb errorBody
	if json.Unmarshal(data, &eb) == nil && eb.Error != "" {
		return &APIError{StatusCode: resp.StatusCode, Message: eb.Error}
	}
	text := strings.TrimSpace(string(data))
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	return &APIError{StatusCode: resp.StatusCode, Message: fmt.Sprintf(
		"admin API at %s answered %q with no JSON error; is this snigate's admin listener?", c.addr(), text)}
}

// reachError explains a request that got no answer.
func (c *Client) reachError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("admin API at %s: %w", c.addr(), ctx.Err())
	}
	return &unreachableError{addr: c.addr(), err: err}
}

// unreachableError says that the admin API could not be reached and what to
// check; it unwraps to the dial error (syscall.ECONNREFUSED, ...).
type unreachableError struct {
	addr string
	err  error
}

func (e *unreachableError) Unwrap() error { return e.err }

func (e *unreachableError) Error() string {
	hint := "is snigate running with listen.admin set? use --admin to give its address"
	if errors.Is(e.err, fs.ErrPermission) {
		hint = "the admin socket is mode 0600: run this as the user snigate runs as"
	}
	return fmt.Sprintf("cannot reach the admin API at %s: %s; %s", e.addr, rootCause(e.err), hint)
}

// rootCause shortens "Get \"http://...\": dial tcp ...: connect: connection
// refused" to "connection refused".
func rootCause(err error) string {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "no answer in time"
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Err.Error()
	}
	return err.Error()
}

// addr returns Addr without a "http://" prefix or trailing slash; "" is DefaultAddr.
func (c *Client) addr() string {
	a := strings.TrimSuffix(strings.TrimPrefix(c.Addr, "http://"), "/")
	if a == "" {
		return DefaultAddr
	}
	return a
}

// baseURL is the URL prefix of requests. A unix socket gets a placeholder
// host; ":9090" (every interface) is reached on localhost.
func (c *Client) baseURL() string {
	a := c.addr()
	if strings.HasPrefix(a, UnixPrefix) {
		return "http://snigate-admin"
	}
	if host, port, err := net.SplitHostPort(a); err == nil && host == "" {
		a = net.JoinHostPort("localhost", port)
	}
	return "http://" + a
}

func (c *Client) httpClient() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return &http.Client{
		Timeout: DefaultClientTimeout,
		Transport: &http.Transport{
			Proxy:             nil, // never send admin calls through HTTP_PROXY
			DialContext:       c.dial,
			DisableKeepAlives: true,
		},
	}
}

// dial connects to the unix socket of a "unix:" Addr, else to the TCP
// address of the request.
func (c *Client) dial(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	if path, ok := strings.CutPrefix(c.addr(), UnixPrefix); ok {
		return d.DialContext(ctx, "unix", path)
	}
	return d.DialContext(ctx, network, address)
}
