package sni

import (
	"testing"
	"time"
)

func TestWarnLimiter(t *testing.T) {
	w := warnLimiter{every: 10 * time.Second}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		reason     string
		at         time.Duration
		ok         bool
		suppressed int
	}{
		{reason: "timeout", at: 0, ok: true},
		{reason: "timeout", at: time.Second, ok: false},
		{reason: "not_tls", at: time.Second, ok: true}, // per reason
		{reason: "timeout", at: 9 * time.Second, ok: false},
		{reason: "timeout", at: 10 * time.Second, ok: true, suppressed: 2},
		{reason: "timeout", at: 30 * time.Second, ok: true, suppressed: 0},
	}
	for i, s := range steps {
		ok, n := w.allow(s.reason, t0.Add(s.at))
		if ok != s.ok || n != s.suppressed {
			t.Errorf("step %d (%s at %v): allow = %v, %d; want %v, %d", i, s.reason, s.at, ok, n, s.ok, s.suppressed)
		}
	}
}
