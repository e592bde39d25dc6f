package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// logTap keeps the gateway's log lines, as `snigate run` writes them, so
// that the tour can show the connection lines of each step: what an
// operator reads. With live set (--keep) it also writes the connection,
// warning and error lines to live as they come. It is the io.Writer of a
// slog.TextHandler, which writes each record in one Write call.
type logTap struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced when a line arrives
	live    io.Writer
}

func newLogTap() *logTap { return &logTap{changed: make(chan struct{})} }

// logger returns the gateway's logger: the tap, and also next when set.
func (t *logTap) logger(next *slog.Logger) *slog.Logger {
	h := slog.Handler(slog.NewTextHandler(t, nil))
	if next != nil {
		h = slog.NewMultiHandler(h, next.Handler())
	}
	return slog.New(h)
}

// Write records one log line.
func (t *logTap) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	close(t.changed)
	t.changed = make(chan struct{})
	if t.live != nil && shownLive(line) {
		fmt.Fprintf(t.live, "  gateway | %s\n", line)
	}
	return len(p), nil
}

// isConnLine reports the one line per finished connection.
func isConnLine(line string) bool { return strings.Contains(line, " msg=connection ") }

// shownLive reports the lines --keep shows as they come.
func shownLive(line string) bool {
	return isConnLine(line) || strings.Contains(line, " level=WARN ") || strings.Contains(line, " level=ERROR ")
}

// mark returns a position in the log for connLines.
func (t *logTap) mark() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.lines)
}

// connLines returns the connection lines logged since mark.
func (t *logTap) connLines(mark int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, l := range t.lines[mark:] {
		if isConnLine(l) {
			out = append(out, l)
		}
	}
	return out
}

// waitConnLines waits until n connection lines were logged since mark (a
// connection is logged when it has ended, shortly after the client closed
// it) or ctx is done.
func (t *logTap) waitConnLines(ctx context.Context, mark, n int) {
	for {
		t.mu.Lock()
		changed := t.changed
		t.mu.Unlock()
		if len(t.connLines(mark)) >= n {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// goLive makes the tap write the lines shown live to w from now on.
func (t *logTap) goLive(w io.Writer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.live = w
}
