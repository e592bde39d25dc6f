package httpverify

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// warnEvery is how often one reason may log a Warn line; metrics count
// every occurrence anyway.
const warnEvery = 10 * time.Second

// warnLimiter lets one log line per reason through per warnEvery and
// counts the ones it holds back.
type warnLimiter struct {
	mu    sync.Mutex
	state map[string]*warnState
}

type warnState struct {
	last       time.Time
	suppressed int
}

// allow reports whether a line for reason may be logged at now, and how
// many were suppressed since the last one.
func (w *warnLimiter) allow(reason string, now time.Time) (bool, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == nil {
		w.state = make(map[string]*warnState)
	}
	st := w.state[reason]
	if st == nil {
		st = &warnState{}
		w.state[reason] = st
	}
	if !st.last.IsZero() && now.Sub(st.last) < warnEvery {
		st.suppressed++
		return false, 0
	}
	n := st.suppressed
	st.last, st.suppressed = now, 0
	return true, n
}

// log logs msg at level on l, rate-limited per reason.
func (w *warnLimiter) log(l *slog.Logger, level slog.Level, reason, msg string, args ...any) {
	ok, suppressed := w.allow(reason, time.Now())
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	l.Log(context.Background(), level, msg, args...)
}
