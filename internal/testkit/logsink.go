package testkit

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// LogSink collects what a logger writes, safe for concurrent writes, and
// wakes the tests waiting for a line. The zero value is ready to use.
type LogSink struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	notify chan struct{} // closed and replaced on each Write; nil until needed
}

// NewLogSink returns an empty sink.
func NewLogSink() *LogSink { return &LogSink{} }

// Logger returns a logger writing text lines to the sink, Debug and up.
func (l *LogSink) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Write appends p and wakes the waiters.
func (l *LogSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if l.notify != nil {
		close(l.notify)
		l.notify = nil
	}
	return len(p), nil
}

// String returns everything written so far.
func (l *LogSink) String() string {
	text, _ := l.snapshot()
	return text
}

// Contains reports whether s was written (within one line or across).
func (l *LogSink) Contains(s string) bool { return strings.Contains(l.String(), s) }

// Lines returns the lines written so far that contain every one of
// parts, without their line ends.
func (l *LogSink) Lines(parts ...string) []string {
	var out []string
	for line := range strings.Lines(l.String()) {
		line = strings.TrimRight(line, "\r\n")
		if line != "" && containsAll(line, parts) {
			out = append(out, line)
		}
	}
	return out
}

// Wait returns the first line that contains every one of parts, waiting
// for it to be written; after WaitLimit it fails the test with the log.
func (l *LogSink) Wait(tb testing.TB, parts ...string) string {
	tb.Helper()
	var line string
	l.WaitFor(tb, func(text string) bool {
		line = firstLine(text, parts)
		return line != ""
	}, func(text string) string { return fmt.Sprintf("no log line with %q; log:\n%s", parts, text) })
	return line
}

// firstLine is the first non-empty line of text that contains every one
// of parts, "" when none does.
func firstLine(text string, parts []string) string {
	for s := range strings.Lines(text) {
		if s = strings.TrimRight(s, "\r\n"); s != "" && containsAll(s, parts) {
			return s
		}
	}
	return ""
}

// WaitFor waits until what was written so far satisfies ok and returns
// it; after WaitLimit it fails the test with why(text).
func (l *LogSink) WaitFor(tb testing.TB, ok func(text string) bool, why func(text string) string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitLimit)
	defer cancel()
	return l.WaitForContext(ctx, tb, ok, why)
}

// WaitForContext is WaitFor bounded by ctx instead of WaitLimit, for a
// test whose subject has a longer deadline of its own (a whole demo
// world starting): when ctx ends first it fails the test with why(text).
func (l *LogSink) WaitForContext(ctx context.Context, tb testing.TB, ok func(text string) bool, why func(text string) string) string {
	tb.Helper()
	for {
		text, changed := l.snapshot()
		if ok(text) {
			return text
		}
		select {
		case <-changed:
		case <-ctx.Done():
			tb.Fatal(why(text))
			return text
		}
	}
}

// snapshot returns the text so far and a channel closed by the next Write.
func (l *LogSink) snapshot() (string, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.notify == nil {
		l.notify = make(chan struct{})
	}
	return l.buf.String(), l.notify
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
