package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestLimiter moved from sni (TestWarnLimiter) with its assertions.
func TestLimiter(t *testing.T) {
	w := Limiter{Every: 10 * time.Second}
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
		ok, n := w.Allow(s.reason, t0.Add(s.at))
		if ok != s.ok || n != s.suppressed {
			t.Errorf("step %d (%s at %v): allow = %v, %d; want %v, %d", i, s.reason, s.at, ok, n, s.ok, s.suppressed)
		}
	}
}

func TestLimiterZeroIsDefaultEvery(t *testing.T) {
	var w Limiter
	t0 := time.Unix(1000, 0)
	w.Allow("r", t0)
	if ok, _ := w.Allow("r", t0.Add(DefaultEvery-time.Nanosecond)); ok {
		t.Error("a second line within DefaultEvery was let through")
	}
	if ok, n := w.Allow("r", t0.Add(DefaultEvery)); !ok || n != 1 {
		t.Errorf("after DefaultEvery: allow = %v, %d; want true, 1", ok, n)
	}
}

func TestLogAppendsSuppressedOnlyAfterHeldBack(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	w := Limiter{Every: time.Hour}
	for range 3 {
		w.Log(logger, slog.LevelWarn, "r", "flood", "client", "c")
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1:\n%s", len(lines), buf.String())
	}
	if strings.Contains(lines[0], Key) {
		t.Errorf("the first line says %s though nothing was held back: %s", Key, lines[0])
	}
	w.state["r"].last = time.Time{} // as if Every had passed
	buf.Reset()
	w.Log(logger, slog.LevelWarn, "r", "flood")
	if !strings.Contains(buf.String(), Key+"=2") {
		t.Errorf("the line after the quiet spell does not say %s=2: %s", Key, buf.String())
	}
}
