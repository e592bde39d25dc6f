package dnsresponder

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// Forwarding defaults.
const (
	// DefaultForwardTimeout bounds one exchange with one forwarder.
	DefaultForwardTimeout = 2 * time.Second
	// DefaultForwardBudget bounds one query across all forwarders, below
	// the 5s a stub resolver waits by default.
	DefaultForwardBudget = 4 * time.Second
	// RetryFailingEvery is how often a failing forwarder is tried in its
	// configured place again; in between it is tried only after the
	// healthy ones, so one dead resolver does not delay every query.
	RetryFailingEvery = 5 * time.Second
)

var (
	errReplyMismatch = errors.New("reply does not match the query's question")
	errNotResponse   = errors.New("reply has QR=0")
)

// forwarders sends queries to the configured resolvers in order, failing
// over on timeout, network error or SERVFAIL.
type forwarders struct {
	list    []*forwarder
	timeout time.Duration
	budget  time.Duration
	now     func() time.Time
	logger  *slog.Logger
	m       *Metrics
}

var _ exchanger = (*forwarders)(nil)

func newForwarders(addrs []string, timeout, budget time.Duration, logger *slog.Logger, m *Metrics) *forwarders {
	if timeout == 0 {
		timeout = DefaultForwardTimeout
	}
	if budget == 0 {
		budget = DefaultForwardBudget
	}
	timeout = min(timeout, budget)
	fs := &forwarders{timeout: timeout, budget: budget, now: time.Now, logger: logger, m: m}
	for _, addr := range addrs {
		fs.list = append(fs.list, newForwarder(addr, timeout))
		m.setUpstreamUp(addr, true)
	}
	return fs
}

// exchange returns the first usable reply to req, nil when no forwarder
// gave one within the budget. Healthy forwarders (and a failing one whose
// retry is due) are tried first, in order; the other failing ones last.
func (fs *forwarders) exchange(req *dns.Msg, clientTCP bool) *dns.Msg {
	ctx, cancel := context.WithTimeout(context.Background(), fs.budget)
	defer cancel()
	q := *req // shallow: only the ID differs, the sections are read-only
	q.Id = dns.Id()
	var buf [8]bool
	skipped := buf[:]
	if len(fs.list) > len(buf) {
		skipped = make([]bool, len(fs.list))
	}
	for i, f := range fs.list {
		if !f.due(fs.now) {
			skipped[i] = true
			continue
		}
		if r := fs.try(ctx, f, &q, clientTCP); r != nil {
			return r
		}
	}
	for i, f := range fs.list {
		if skipped[i] {
			if r := fs.try(ctx, f, &q, clientTCP); r != nil {
				return r
			}
		}
	}
	return nil
}

// try asks f within the per-forwarder timeout and what is left of the
// budget; nil means fail over.
func (fs *forwarders) try(ctx context.Context, f *forwarder, q *dns.Msg, clientTCP bool) *dns.Msg {
	if ctx.Err() != nil {
		return nil
	}
	// A forwarder cut short by the query's budget does not get its own
	// timeout: its failure is counted, but does not make it failing.
	deadline, _ := ctx.Deadline()
	fair := time.Until(deadline) >= fs.timeout
	actx, cancel := context.WithTimeout(ctx, fs.timeout)
	defer cancel()
	r, err := f.exchange(actx, q, clientTCP)
	fs.record(f, r, err, fair)
	if err != nil || r.Rcode == dns.RcodeServerFailure {
		return nil
	}
	return r
}

// record counts the outcome of one exchange and logs a change of state.
// A SERVFAIL fails over but leaves the forwarder healthy: it answered.
func (fs *forwarders) record(f *forwarder, r *dns.Msg, err error, fair bool) {
	switch {
	case err != nil:
		fs.m.upstream(f.addr, errorResult(err))
		if fair && f.markFailing(fs.now()) {
			fs.m.setUpstreamUp(f.addr, false)
			fs.logger.Info("dns: forwarder failing, trying the next one first",
				"upstream", f.addr, "result", errorResult(err), "err", err)
		}
		return
	case r.Rcode == dns.RcodeServerFailure:
		fs.m.upstream(f.addr, upstreamServFail)
	default:
		fs.m.upstream(f.addr, upstreamOK)
	}
	if f.markHealthy() {
		fs.m.setUpstreamUp(f.addr, true)
		fs.logger.Info("dns: forwarder answering again", "upstream", f.addr, "result", upstreamOK)
	}
}

func errorResult(err error) string {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return upstreamTimeout
	}
	return upstreamError
}

// forwarder is one resolver, with its health as seen by recent queries.
type forwarder struct {
	addr    string
	udp     *dns.Client
	tcp     *dns.Client
	failing atomic.Bool
	retryAt atomic.Int64 // unix ns: when a failing forwarder is next tried in its place
}

func newForwarder(addr string, timeout time.Duration) *forwarder {
	return &forwarder{
		addr: addr,
		// The read buffer is the query's EDNS size, else 512 bytes.
		udp: &dns.Client{Net: "udp", Timeout: timeout},
		tcp: &dns.Client{Net: "tcp", Timeout: timeout},
	}
}

// exchange asks over UDP, then over TCP when the reply is truncated and
// the client asked over TCP. A UDP client gets the truncated reply and
// retries over TCP itself (as CoreDNS forward does), so a large answer is
// fetched whole once, for the client that can take it.
func (f *forwarder) exchange(ctx context.Context, q *dns.Msg, clientTCP bool) (*dns.Msg, error) {
	r, _, err := f.udp.ExchangeContext(ctx, q, f.addr)
	if err == nil && r.Truncated && clientTCP {
		r, _, err = f.tcp.ExchangeContext(ctx, q, f.addr)
	}
	if err != nil {
		return nil, err
	}
	if err := matchReply(q, r); err != nil {
		return nil, err
	}
	return r, nil
}

// matchReply checks that r answers q (the ID is checked by the client). A
// reply without a question is accepted only as an error.
func matchReply(q, r *dns.Msg) error {
	if !r.Response {
		return errNotResponse
	}
	if len(r.Question) == 0 && r.Rcode != dns.RcodeSuccess {
		return nil
	}
	if len(r.Question) != 1 {
		return errReplyMismatch
	}
	rq, qq := r.Question[0], q.Question[0]
	if rq.Qtype != qq.Qtype || rq.Qclass != qq.Qclass || !strings.EqualFold(rq.Name, qq.Name) {
		return errReplyMismatch
	}
	return nil
}

// due reports whether f should be tried in its configured place: it is
// healthy, or it is failing and this caller won its retry slot.
func (f *forwarder) due(now func() time.Time) bool {
	if !f.failing.Load() {
		return true
	}
	at, t := f.retryAt.Load(), now()
	return t.UnixNano() >= at && f.retryAt.CompareAndSwap(at, t.Add(RetryFailingEvery).UnixNano())
}

// markFailing marks f failing and pushes its next retry out; it reports whether
// f was healthy until now.
func (f *forwarder) markFailing(now time.Time) bool {
	f.retryAt.Store(now.Add(RetryFailingEvery).UnixNano())
	return f.failing.CompareAndSwap(false, true)
}

// markHealthy marks f healthy; it reports whether f was failing until now.
func (f *forwarder) markHealthy() bool {
	return f.failing.CompareAndSwap(true, false)
}
