package httpbridge

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineSink is an in-memory audit file: it collects lines and wakes
// waiters on each write; block, when set, holds every write until closed.
type lineSink struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	notify chan struct{}
	block  chan struct{}
	fail   error
	// entered receives once per Write, before it blocks (nil: not sent).
	entered chan struct{}
}

func newLineSink() *lineSink { return &lineSink{notify: make(chan struct{})} }

func (s *lineSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	block, fail, entered := s.block, s.fail, s.entered
	s.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if block != nil {
		<-block
	}
	if fail != nil {
		return 0, fail
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	close(s.notify)
	s.notify = make(chan struct{})
	return len(p), nil
}

func (s *lineSink) Close() error { return nil }

// lines returns the lines written so far.
func (s *lineSink) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	text := strings.TrimSuffix(s.buf.String(), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// memAudit is an AuditLog writing to a lineSink.
type memAudit struct {
	log  *AuditLog
	sink *lineSink
}

func newMemAudit(tb testing.TB, log *slog.Logger, m *Metrics) *memAudit {
	return newMemAuditQueue(tb, log, m, DefaultAuditQueue, newLineSink())
}

func newMemAuditQueue(tb testing.TB, log *slog.Logger, m *Metrics, queue int, sink *lineSink) *memAudit {
	tb.Helper()
	f := startAudit("mem", fixedWriter{sink}, queue, log, m)
	f.refs = 1
	a := &memAudit{log: &AuditLog{f: f}, sink: sink}
	tb.Cleanup(func() { _ = a.log.Close() })
	return a
}

// wait returns the first n records, parsed strictly, waiting for them.
func (a *memAudit) wait(tb testing.TB, n int) []auditLine {
	tb.Helper()
	timeout := time.After(waitLimit)
	for {
		a.sink.mu.Lock()
		ch := a.sink.notify
		a.sink.mu.Unlock()
		if lines := a.sink.lines(); len(lines) >= n {
			out := make([]auditLine, n)
			for i := range n {
				out[i] = parseAuditLine(tb, lines[i])
			}
			return out
		}
		select {
		case <-ch:
		case <-timeout:
			tb.Fatalf("want %d audit records, have:\n%s", n, strings.Join(a.sink.lines(), "\n"))
		}
	}
}

func parseAuditLine(tb testing.TB, line string) auditLine {
	tb.Helper()
	var l auditLine
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		tb.Fatalf("audit line %q: %v", line, err)
	}
	return l
}
