package snigate

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/internal/config"
)

// checkSettings is the `answer_check` line of a stanza: the same
// settings as the snigate file's dns.answer_check.
type checkSettings struct {
	port       int
	interval   time.Duration
	timeout    time.Duration
	fall, rise int
}

// parseAnswerCheck reads `answer_check [port N] [interval D] [timeout D]
// [fall N] [rise N]`; what it leaves out takes dns.answer_check's
// defaults (port 443).
func (s *settings) parseAnswerCheck(c *caddy.Controller) error {
	if s.check != nil {
		return c.Errf("answer_check: given twice; one per stanza")
	}
	cs := &checkSettings{port: config.DefaultAnswerCheckPort, interval: config.DefaultAnswerCheckInterval,
		timeout: config.DefaultAnswerCheckTimeout, fall: config.DefaultAnswerCheckFall, rise: config.DefaultAnswerCheckRise}
	args := c.RemainingArgs()
	if len(args)%2 != 0 {
		return c.Errf("answer_check: want pairs such as `port 443 interval 2s timeout 1s fall 2 rise 2`, got '%v'", args)
	}
	for i := 0; i < len(args); i += 2 {
		if err := cs.set(args[i], args[i+1]); err != nil {
			return c.Errf("answer_check: %v", err)
		}
	}
	if cs.timeout > cs.interval {
		return c.Errf("answer_check: timeout %v: want at most the interval (%v)", cs.timeout, cs.interval)
	}
	s.check = cs
	return nil
}

// set reads one key and its value.
func (cs *checkSettings) set(key, val string) error {
	var err error
	switch key {
	case "port":
		cs.port, err = intIn(val, 1, 65535)
	case "interval":
		cs.interval, err = positiveDuration(val)
	case "timeout":
		cs.timeout, err = positiveDuration(val)
	case "fall":
		cs.fall, err = intIn(val, 1, 1000)
	case "rise":
		cs.rise, err = intIn(val, 1, 1000)
	default:
		return fmt.Errorf("unknown setting '%s': want port, interval, timeout, fall or rise", key)
	}
	if err != nil {
		return fmt.Errorf("%s: %v", key, err)
	}
	return nil
}

func intIn(s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("want a number from %d to %d, got '%s'", lo, hi, s)
	}
	return n, nil
}

func positiveDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("want a duration such as 2s, got '%s'", s)
	}
	return d, nil
}

// checkFromFile is the file's dns.answer_check as a stanza's settings.
func checkFromFile(ac *config.AnswerCheck) *checkSettings {
	return &checkSettings{port: ac.Port, interval: ac.Interval, timeout: ac.Timeout, fall: ac.Fall, rise: ac.Rise}
}

// newAnswerCheck builds the check of answer, naming the first routed
// pattern in its ClientHello.
func newAnswerCheck(cs *checkSettings, answer []netip.Addr, first string, m *Metrics, log logger) (*dnsresponder.AnswerCheck, error) {
	return dnsresponder.NewAnswerCheck(dnsresponder.AnswerCheckConfig{
		Answer: answer, Port: cs.port, ServerName: dnsresponder.CheckServerName(first),
		Interval: cs.interval, Timeout: cs.timeout, Fall: cs.fall, Rise: cs.rise,
		Logger: slog.New(logHandler{log}), Metrics: m.answerMetrics(),
	})
}

// logHandler sends the check's log lines (info and above) to CoreDNS's
// plugin logger, attributes after the message.
type logHandler struct{ log logger }

func (h logHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h logHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h logHandler) WithGroup(string) slog.Handler                { return h }

func (h logHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	switch {
	case r.Level >= slog.LevelError:
		h.log.Errorf("%s", b.String())
	case r.Level >= slog.LevelWarn:
		h.log.Warningf("%s", b.String())
	default:
		h.log.Infof("%s", b.String())
	}
	return nil
}
