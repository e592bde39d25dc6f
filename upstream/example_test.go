package upstream_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/snigate/snigate/upstream"
)

// Example_pool shows the lifecycle of a Pool: build it, run its health
// checks in the background, pick hosts for each new connection, count the
// connection while it lasts, and stop the checks.
func Example_pool() {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a stand-in upstream
	if err != nil {
		panic(err)
	}
	defer ln.Close()

	pool, err := upstream.New(upstream.Config{
		Route:   "registry",
		Addrs:   []string{ln.Addr().String()},
		Balance: upstream.RoundRobin,
		Check:   upstream.Check{Kind: upstream.CheckTCP}, // defaults: every 3s, fall 3, rise 2
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- pool.Run(ctx) }()

	// For each new client connection: try the candidates in order.
	hosts := pool.Candidates()
	fmt.Println("candidates:", len(hosts))
	release := hosts[0].Acquire() // when the dial succeeded
	fmt.Println("active:", pool.Status()[0].ActiveConnections)
	release() // when the connection ends
	fmt.Println("active:", pool.Status()[0].ActiveConnections)

	// The operator takes the host out: no candidates left.
	_ = pool.SetState(hosts[0].Addr(), upstream.StateDrain)
	fmt.Println("candidates while draining:", len(pool.Candidates()))

	cancel()
	fmt.Println("run:", <-done)
	// Output:
	// candidates: 1
	// active: 1
	// active: 0
	// candidates while draining: 0
	// run: <nil>
}
