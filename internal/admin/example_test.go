package admin_test

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/snigate/snigate/internal/admin"
	"github.com/snigate/snigate/upstream"
)

// gateway stands in for internal/gateway, which owns the upstream pools.
type gateway struct {
	mu sync.Mutex
	st []upstream.Status
}

func (g *gateway) Upstreams() []upstream.Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]upstream.Status(nil), g.st...)
}

func (g *gateway) SetUpstreamState(route, addr string, s upstream.State) (upstream.Status, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range g.st {
		if g.st[i].Route == route && g.st[i].Upstream == addr {
			g.st[i].State = s
			return g.st[i], nil
		}
	}
	return upstream.Status{}, fmt.Errorf("route %q upstream %q: %w", route, addr, admin.ErrNotFound)
}

// The lifecycle: Listen, New, Serve, then Shutdown; `snigate ctl` is a Client.
func Example() {
	gw := &gateway{st: []upstream.Status{
		{Route: "registry", Upstream: "10.1.0.10:443", State: upstream.StateReady, Healthy: true},
	}}
	ln, err := admin.Listen("127.0.0.1:0") // or "unix:/run/snigate/admin.sock"
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := admin.New(admin.Config{Upstreams: gw, ReadyFunc: func() bool { return true }})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()

	ctx := context.Background()
	c := &admin.Client{Addr: ln.Addr().String()}
	if _, err := c.SetState(ctx, "registry", "10.1.0.10:443", upstream.StateDrain); err != nil {
		fmt.Println(err)
	}
	st, err := c.Upstreams(ctx)
	if err != nil {
		fmt.Println(err)
	}
	admin.WriteUpstreamTable(os.Stdout, st)

	srv.Shutdown(ctx)
	fmt.Println("Serve returned", <-done)
	// Output:
	// ROUTE     UPSTREAM       STATE  HEALTH  ACTIVE  LAST_CHECK  LAST_ERROR
	// registry  10.1.0.10:443  drain  up      0       never       -
	// Serve returned <nil>
}
