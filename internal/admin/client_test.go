package admin

import (
	"context"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/snigate/snigate/upstream"
)

// clientAddrs starts a server per address form and returns the Client
// addresses that reach it.
func clientAddrs(t *testing.T, fake *fakeUpstreams) map[string]string {
	_, tcp := startServer(t, Config{Upstreams: fake}, "127.0.0.1:0")
	_, unix := startServer(t, Config{Upstreams: fake}, UnixPrefix+sockPath(t))
	_, port, _ := net.SplitHostPort(tcp)
	return map[string]string{
		"tcp":             tcp,
		"tcp http prefix": "http://" + tcp + "/",
		"tcp no host":     ":" + port,
		"unix":            unix,
	}
}

func TestClientAgainstServer(t *testing.T) {
	fake := newFake()
	for name, addr := range clientAddrs(t, fake) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := &Client{Addr: addr}
			got, err := c.Upstreams(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := fake.Upstreams(); !reflect.DeepEqual(got, want) {
				t.Errorf("Upstreams = %+v\nwant %+v", got, want)
			}
			for _, up := range []string{"10.1.0.10:443", "[2001:db8::1]:443"} {
				for _, state := range []upstream.State{upstream.StateMaint, upstream.StateReady} {
					st, err := c.SetState(ctx, "registry", up, state)
					if err != nil {
						t.Fatal(err)
					}
					if st.Upstream != up || st.State != state || fake.state("registry", up) != state {
						t.Errorf("SetState(%s, %s) = %+v; gateway has %s", up, state, st, fake.state("registry", up))
					}
				}
			}
		})
	}
}

func TestClientAPIErrors(t *testing.T) {
	_, addr := startServer(t, Config{Upstreams: newFake()}, "127.0.0.1:0")
	c := &Client{Addr: addr}
	tests := []struct {
		name, route, upstream string
		state                 upstream.State
		wantCode              int
		wantMsg               string
	}{
		{"unknown route", "nope", "10.1.0.10:443", upstream.StateDrain, 404, `route "nope": not found`},
		{"unknown upstream", "registry", "10.9.9.9:443", upstream.StateDrain, 404, `upstream "10.9.9.9:443": unknown upstream`},
		{"unknown state", "registry", "10.1.0.10:443", "down", 400, "ready, drain, maint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.SetState(context.Background(), tt.route, tt.upstream, tt.state)
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("error %v is not an *APIError", err)
			}
			if ae.StatusCode != tt.wantCode || !strings.Contains(ae.Message, tt.wantMsg) {
				t.Errorf("got %d %q, want %d and %q", ae.StatusCode, ae.Message, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

func TestClientEmptyNames(t *testing.T) {
	c := &Client{Addr: freeAddr(t)} // never dialled
	for _, args := range [][2]string{{"", "10.1.0.10:443"}, {"registry", ""}} {
		if _, err := c.SetState(context.Background(), args[0], args[1], upstream.StateDrain); err == nil ||
			!strings.Contains(err.Error(), "want a route name and an upstream") {
			t.Errorf("SetState(%q, %q) error = %v", args[0], args[1], err)
		}
	}
}

func TestClientUnreachable(t *testing.T) {
	tcp := freeAddr(t)
	sock := sockPath(t)
	tests := []struct {
		name, addr string
		wantErrno  error
		want       string
	}{
		{"tcp refused", tcp, syscall.ECONNREFUSED,
			"cannot reach the admin API at " + tcp + ": connection refused; is snigate running with listen.admin set? use --admin"},
		{"unix missing", UnixPrefix + sock, syscall.ENOENT,
			"cannot reach the admin API at unix:" + sock + ": no such file or directory; is snigate running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&Client{Addr: tt.addr}).Upstreams(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q\nwant prefix %q", err, tt.want)
			}
			if !errors.Is(err, tt.wantErrno) {
				t.Errorf("error does not wrap %v", tt.wantErrno)
			}
		})
	}
}

func TestClientCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := (&Client{Addr: freeAddr(t)}).Upstreams(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

// Something that is not snigate on the admin port: the error says so.
func TestClientForeignServer(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"plain text error", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "bad gateway", http.StatusBadGateway)
		}, `answered "bad gateway" with no JSON error; is this snigate's admin listener? (HTTP 502)`},
		{"200 but not JSON", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("<html>"))
		}, "decode the answer to GET /api/upstreams"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: tt.handler}
			done := make(chan struct{})
			go func() { defer close(done); srv.Serve(ln) }()
			defer func() { srv.Close(); <-done }()
			_, err = (&Client{Addr: ln.Addr().String()}).Upstreams(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}
