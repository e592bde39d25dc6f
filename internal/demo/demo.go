// Package demo is `snigate demo`: a self-contained tour on loopback. It
// creates throwaway PKI, starts an in-memory registry that refuses clients
// without the edge certificate, starts the gateway in bridge mode with its
// DNS responder, resolves the registry name through the responder, pulls an
// image through the gateway and checks its digest (printed in full, to
// compare with `skopeo inspect`), shows the gateway's log line of each
// connection of the pull, then shows that a direct pull without the edge
// certificate is refused.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"
)

// RegistryName is the registry host name the demo routes.
const RegistryName = "registry.example.test"

// Options configures Run.
type Options struct {
	// Keep leaves everything running after the tour, printing commands to
	// try by hand, until ctx is done.
	Keep bool
	// Out receives the tour's lines; nil means os.Stdout.
	Out io.Writer
	// Command is how the --keep hints invoke snigate; "": this program
	// as it was started (selfCommand).
	Command string
	// Logger, when set, also receives every line of the gateway's log.
	// The tour shows the connection lines of each step either way (and,
	// with Keep, the connection lines and warnings as they come).
	Logger *slog.Logger
}

// ErrFailed is returned when a step of the tour failed.
var ErrFailed = errors.New("demo failed")

// tour prints one line per step with its duration.
type tour struct {
	out    io.Writer
	start  time.Time
	failed bool
}

// step runs f and prints its outcome as one line.
func (t *tour) step(what string, f func() (string, error)) error {
	begin := time.Now()
	detail, err := f()
	d := seconds(time.Since(begin))
	if err != nil {
		t.failed = true
		fmt.Fprintf(t.out, "  FAIL %-48s %7s  %v\n", what, d, err)
		return err
	}
	fmt.Fprintf(t.out, "  ok   %-48s %7s  %s\n", what, d, detail)
	return nil
}

// gatewayLines prints the gateway's log lines of the step just printed.
func (t *tour) gatewayLines(lines []string) {
	for _, l := range lines {
		fmt.Fprintf(t.out, "       gateway | %s\n", l)
	}
}

// Run runs the tour. It returns nil when every step succeeded.
func Run(ctx context.Context, opts Options) error {
	out := opts.Out
	if out == nil {
		out = os.Stdout
	}
	w, err := newWorld(ctx, opts, out)
	if w != nil {
		defer w.close()
	}
	if err != nil {
		fmt.Fprintf(out, "\nverdict: FAILED (%v)\n", err)
		return fmt.Errorf("%w: %v", ErrFailed, err)
	}
	fmt.Fprintf(out, "\nverdict: OK — a node with no proxy setting pulled %s through snigate, which carried the edge certificate; the registry refused the same pull without it (%s)\n",
		RegistryName, seconds(time.Since(w.t.start)))
	if opts.Keep {
		w.printTryIt(out)
		w.log.goLive(out)
		<-ctx.Done()
	}
	return nil
}
