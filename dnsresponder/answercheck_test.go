package dnsresponder

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/testkit"
)

var (
	gwA = netip.MustParseAddr("10.0.0.5")
	gwB = netip.MustParseAddr("10.0.0.6")
	gwC = netip.MustParseAddr("2001:db8::7")
)

var errDown = errors.New("connect: connection refused")

// fakeProbe answers the check from a set of addresses that are down; a
// hung address blocks until the check's timeout.
type fakeProbe struct {
	mu   sync.Mutex
	down map[netip.Addr]bool
	hung map[netip.Addr]bool
}

func newFakeProbe() *fakeProbe {
	return &fakeProbe{down: map[netip.Addr]bool{}, hung: map[netip.Addr]bool{}}
}

func (f *fakeProbe) set(a netip.Addr, down, hung bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[a], f.hung[a] = down, hung
}

func (f *fakeProbe) probe(ctx context.Context, ap netip.AddrPort) error {
	f.mu.Lock()
	down, hung := f.down[ap.Addr()], f.hung[ap.Addr()]
	f.mu.Unlock()
	switch {
	case hung:
		<-ctx.Done()
		return ctx.Err()
	case down:
		return errDown
	}
	return nil
}

func newTestCheck(t testing.TB, m *AnswerMetrics, addrs ...netip.Addr) (*AnswerCheck, *fakeProbe) {
	t.Helper()
	c, err := NewAnswerCheck(AnswerCheckConfig{Answer: addrs, Port: 443, ServerName: "registry.example.test",
		Interval: 2 * time.Second, Timeout: time.Second, Fall: 2, Rise: 2, Logger: discardLogger(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeProbe()
	c.probe = f.probe
	return c, f
}

// runCheck runs c.Run in the bubble until the test ends.
func runCheck(t *testing.T, c *AnswerCheck) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	synctest.Wait() // the first round, at once
}

func wantCurrent(t *testing.T, c *AnswerCheck, when string, want ...netip.Addr) {
	t.Helper()
	if got := c.Current(); !slices.Equal(got, want) {
		t.Errorf("%s: answers %v, want %v", when, got, want)
	}
}

// step lets d of fake time pass and the checks due in it finish.
func step(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// TestAnswerCheckFallRiseTiming: an address that stops answering is left
// out exactly at the fall-th failed check (interval x fall after the last
// good one), and is given again at the rise-th good one.
func TestAnswerCheckFallRiseTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, f := newTestCheck(t, nil, gwA, gwB)
		runCheck(t, c)
		start := time.Now()
		wantCurrent(t, c, "both up", gwA, gwB)
		f.set(gwB, true, false)
		step(2 * time.Second)
		wantCurrent(t, c, "one failed check (fall 2)", gwA, gwB)
		step(2 * time.Second)
		wantCurrent(t, c, "two failed checks", gwA)
		if d := time.Since(start); d != 4*time.Second {
			t.Errorf("left out %v after the last good check, want interval x fall = 4s", d)
		}
		f.set(gwB, false, false)
		step(2 * time.Second)
		wantCurrent(t, c, "one good check (rise 2)", gwA)
		step(2 * time.Second)
		wantCurrent(t, c, "two good checks", gwA, gwB)
	})
}

// TestAnswerCheckHungAddress: a gateway that accepts and never answers
// fails each check at the timeout, and the rounds stay on the interval.
func TestAnswerCheckHungAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, f := newTestCheck(t, nil, gwA, gwB)
		f.set(gwA, false, true)
		runCheck(t, c) // round 1 of A waits for its 1s timeout
		wantCurrent(t, c, "first round still waiting", gwA, gwB)
		step(time.Second)
		wantCurrent(t, c, "one timeout", gwA, gwB)
		step(2 * time.Second)
		wantCurrent(t, c, "two timeouts", gwB)
		if st := c.Status()[0]; st.Healthy || st.LastError != context.DeadlineExceeded.Error() {
			t.Errorf("status of the hung address: %+v", st)
		}
	})
}

// TestAnswerCheckAnswers: which addresses are answered for each state of
// the checks and of LeaveOut.
func TestAnswerCheckAnswers(t *testing.T) {
	tests := []struct {
		name    string
		down    []netip.Addr
		leftOut []netip.Addr
		want    []netip.Addr
	}{
		{name: "all up", want: []netip.Addr{gwA, gwB, gwC}},
		{name: "one down", down: []netip.Addr{gwB}, want: []netip.Addr{gwA, gwC}},
		{name: "none up: all of them", down: []netip.Addr{gwA, gwB, gwC}, want: []netip.Addr{gwA, gwB, gwC}},
		{name: "own address left out at once", leftOut: []netip.Addr{gwA}, want: []netip.Addr{gwB, gwC}},
		{name: "left out and the others down: the others", leftOut: []netip.Addr{gwA}, down: []netip.Addr{gwB, gwC},
			want: []netip.Addr{gwB, gwC}},
		{name: "left out and one other down", leftOut: []netip.Addr{gwA}, down: []netip.Addr{gwB}, want: []netip.Addr{gwC}},
		{name: "every address left out: all of them", leftOut: []netip.Addr{gwA, gwB, gwC}, want: []netip.Addr{gwA, gwB, gwC}},
		{name: "an address that is not an answer is ignored", leftOut: []netip.Addr{netip.MustParseAddr("10.9.9.9")},
			want: []netip.Addr{gwA, gwB, gwC}},
		{name: "IPv4-mapped own address", leftOut: []netip.Addr{netip.MustParseAddr("::ffff:10.0.0.5")}, want: []netip.Addr{gwB, gwC}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, f := newTestCheck(t, nil, gwA, gwB, gwC)
			for _, a := range tc.down {
				f.set(a, true, false)
			}
			c.CheckOnce(t.Context())
			c.CheckOnce(t.Context())
			c.LeaveOut(tc.leftOut)
			if got := c.Current(); !slices.Equal(got, tc.want) {
				t.Errorf("answers %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCheckedPolicyFollowsTheCheck: the policy's answers (slow and fast
// path) change as soon as the check publishes a new list.
func TestCheckedPolicyFollowsTheCheck(t *testing.T) {
	c, f := newTestCheck(t, nil, netip.MustParseAddr(answer4), netip.MustParseAddr("192.0.2.11"))
	h, err := New(Config{Names: testNames(t), AnswerCheck: c, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	both := []string{exactName + " 30 IN A " + answer4, exactName + " 30 IN A 192.0.2.11"}
	sameRRs(t, "both up", policyA(t, h.Policy()), both)
	f.set(netip.MustParseAddr("192.0.2.11"), true, false)
	c.CheckOnce(t.Context())
	c.CheckOnce(t.Context())
	sameRRs(t, "one down", policyA(t, h.Policy()), both[:1])
	req := new(dns.Msg)
	req.SetQuestion(exactName, dns.TypeA)
	b, _ := req.Pack()
	if !sameAsSlowPath(t, h, b) {
		t.Error("the fast path disagrees with the slow path after a change")
	}
	c.LeaveOut([]netip.Addr{netip.MustParseAddr(answer4)})
	sameRRs(t, "own left out, the other down: the other", policyA(t, h.Policy()), both[1:])
	c.TakeBack([]netip.Addr{netip.MustParseAddr(answer4)}) // the readiness switch on again
	sameRRs(t, "own taken back, the other down: own", policyA(t, h.Policy()), both[:1])
}

func policyA(t *testing.T, p *Policy) []dns.RR {
	t.Helper()
	req := new(dns.Msg)
	req.SetQuestion(exactName, dns.TypeA)
	reply, ok := p.Answer(req)
	if !ok {
		t.Fatal("not routed")
	}
	return reply.Answer
}

// TestAnswerCheckAdopt: a reload keeps the state of the addresses both
// checks have and what was left out, and drops the removed address's
// series.
func TestAnswerCheckAdopt(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewAnswerMetrics(reg, AnswerMetricName)
	old, f := newTestCheck(t, m, gwA, gwB, gwC)
	f.set(gwB, true, false)
	old.CheckOnce(t.Context())
	old.CheckOnce(t.Context())
	old.LeaveOut([]netip.Addr{gwA})
	old.publishMetrics()
	cur, _ := newTestCheck(t, m, gwA, gwB)
	cur.Adopt(old)
	wantCurrent(t, cur, "after adopt", gwB) // A left out, B down, nothing else: B
	st := cur.Status()
	if !st[0].LeftOut || st[1].Healthy || st[1].LastError != errDown.Error() {
		t.Errorf("adopted status %+v", st)
	}
	if got := answerGauges(t, reg); !sameGauges(got, map[string]float64{"10.0.0.5": 1, "10.0.0.6": 0}) {
		t.Errorf("snigate_dns_answer_up = %v, want 10.0.0.5=1 10.0.0.6=0 and no 2001:db8::7", got)
	}
}

func sameGauges(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestAnswerMetrics: snigate_dns_answer_up follows each address.
func TestAnswerMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewAnswerMetrics(reg, AnswerMetricName)
	if again := NewAnswerMetrics(reg, AnswerMetricName); again.up != m.up {
		t.Error("registering again did not return the gauge already registered")
	}
	synctest.Test(t, func(t *testing.T) {
		c, f := newTestCheck(t, m, gwA, gwB)
		f.set(gwB, true, false)
		runCheck(t, c)
		if got := answerGauges(t, reg); !sameGauges(got, map[string]float64{"10.0.0.5": 1, "10.0.0.6": 1}) {
			t.Errorf("after one check: %v", got)
		}
		step(2 * time.Second)
		if got := answerGauges(t, reg); !sameGauges(got, map[string]float64{"10.0.0.5": 1, "10.0.0.6": 0}) {
			t.Errorf("after two failed checks: %v", got)
		}
	})
}

func answerGauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, s := range testkit.AllSeries(t, reg, AnswerMetricName) {
		out[s.Labels["address"]] = s.Value
	}
	return out
}

// TestNewAnswerCheckRefuses: what a caller gets wrong is an error.
func TestNewAnswerCheckRefuses(t *testing.T) {
	ok := AnswerCheckConfig{Answer: []netip.Addr{gwA}, Port: 443, ServerName: "r.example.test"}
	tests := []struct {
		name   string
		change func(*AnswerCheckConfig)
	}{
		{name: "no addresses", change: func(c *AnswerCheckConfig) { c.Answer = nil }},
		{name: "zero address", change: func(c *AnswerCheckConfig) { c.Answer = []netip.Addr{{}} }},
		{name: "port 0", change: func(c *AnswerCheckConfig) { c.Port = 0 }},
		{name: "no server name", change: func(c *AnswerCheckConfig) { c.ServerName = "" }},
		{name: "timeout beyond interval", change: func(c *AnswerCheckConfig) { c.Interval, c.Timeout = time.Second, 2*time.Second }},
		{name: "negative fall", change: func(c *AnswerCheckConfig) { c.Fall = -1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.change(&cfg)
			if _, err := NewAnswerCheck(cfg); err == nil {
				t.Error("accepted")
			}
		})
	}
	if _, err := NewAnswerCheck(ok); err != nil {
		t.Errorf("the good config: %v", err)
	}
}
