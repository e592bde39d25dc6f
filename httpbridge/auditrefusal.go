package httpbridge

import (
	"net"
	"sync"
	"time"
)

// DefaultAuditRefusalWindow is how long, after a refusal's audit record,
// the refusals of the same client (address, any port), route and reason
// are counted instead of written: at the window's end one record, the
// last of them, says with "suppressed" how many more were not written.
// A node repeating a refused request writes 2 records per window however
// fast it repeats; snigate_http_refused_total counts every one.
const DefaultAuditRefusalWindow = 10 * time.Second

// maxRefusalClients bounds the clients whose refusals are tracked at
// once; beyond it, the refusals of further clients share one entry per
// route and reason (their records keep each one's own client).
const maxRefusalClients = 4096

// refusalKey is what repeated refusals are aggregated by.
type refusalKey struct {
	route, client, reason string
}

// refusalWindow is one key's window: when its first record was written,
// and the last refusal since held back with how many were.
type refusalWindow struct {
	start time.Time
	count int       // refusals held back since start
	last  auditLine // the last of them
}

// refusalAggregator holds back repeated refusals, for one audit file.
type refusalAggregator struct {
	window time.Duration
	mu     sync.Mutex
	open   map[refusalKey]*refusalWindow
}

func newRefusalAggregator(window time.Duration) *refusalAggregator {
	return &refusalAggregator{window: window, open: make(map[refusalKey]*refusalWindow)}
}

// admit reports whether the refusal l (for reason) is written now; when
// not, it is held back and counted. A window past its end that the sweep
// has not closed yet is closed first: its summary, if any, is returned
// to be written before l.
func (a *refusalAggregator) admit(l auditLine, reason string, now time.Time) (write bool, summary *auditLine) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := refusalKey{route: l.Route, client: clientIP(l.Client), reason: reason}
	w := a.open[k]
	if w == nil && len(a.open) >= maxRefusalClients {
		k.client = "" // the shared entry of the clients beyond the bound
		w = a.open[k]
	}
	if w != nil && now.Sub(w.start) >= a.window {
		summary = w.summary()
		delete(a.open, k)
		w = nil
	}
	if w == nil {
		a.open[k] = &refusalWindow{start: now}
		return true, summary
	}
	w.count++
	w.last = l
	return false, nil
}

// sweep closes the windows that ended by now and returns their summaries.
func (a *refusalAggregator) sweep(now time.Time) []auditLine {
	return a.close(func(w *refusalWindow) bool { return now.Sub(w.start) >= a.window })
}

// flush closes every window (the file is being closed) and returns their
// summaries.
func (a *refusalAggregator) flush() []auditLine {
	return a.close(func(*refusalWindow) bool { return true })
}

func (a *refusalAggregator) close(ended func(*refusalWindow) bool) []auditLine {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []auditLine
	for k, w := range a.open {
		if !ended(w) {
			continue
		}
		delete(a.open, k)
		if s := w.summary(); s != nil {
			out = append(out, *s)
		}
	}
	return out
}

// summary is the record that ends the window: the last refusal held
// back, saying how many others were; nil when none was.
func (w *refusalWindow) summary() *auditLine {
	if w.count == 0 {
		return nil
	}
	s := w.last
	s.Suppressed = w.count - 1
	return &s
}

// clientIP is the address of an ip:port client, without the port.
func clientIP(client string) string {
	if host, _, err := net.SplitHostPort(client); err == nil {
		return host
	}
	return client
}
