// Package ratelog lets one log line per reason through per interval and
// counts the ones it holds back, so a flood of one fault writes a few
// lines while metrics count every occurrence.
//
// Usage:
//
//	var warn ratelog.Limiter // zero value: DefaultEvery
//	warn.Log(logger, slog.LevelWarn, "timeout", "client hello timed out", "client", addr)
//
// The line after a quiet spell carries Key ("suppressed") with the number
// of lines held back for that reason since the last one written.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Key is the attribute that says how many lines of a reason were held
// back since the last one written. Every rate-limited line uses it.
const Key = "suppressed"

// DefaultEvery is the interval of a Limiter whose Every is zero.
const DefaultEvery = 10 * time.Second

// Limiter rate-limits log lines per reason. The zero value is ready to
// use and lets one line per reason through per DefaultEvery. It is safe
// for concurrent use; set Every before the first call.
type Limiter struct {
	// Every is the least time between two lines of one reason; zero
	// means DefaultEvery.
	Every time.Duration

	mu    sync.Mutex
	state map[string]*state
}

type state struct {
	last       time.Time
	suppressed int
}

// Allow reports whether a line for reason may be logged at now, and how
// many were held back since the last one (0 when ok is false).
func (l *Limiter) Allow(reason string, now time.Time) (ok bool, suppressed int) {
	every := l.Every
	if every == 0 {
		every = DefaultEvery
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == nil {
		l.state = make(map[string]*state)
	}
	st := l.state[reason]
	if st == nil {
		st = &state{}
		l.state[reason] = st
	}
	if !st.last.IsZero() && now.Sub(st.last) < every {
		st.suppressed++
		return false, 0
	}
	n := st.suppressed
	st.last, st.suppressed = now, 0
	return true, n
}

// Log logs msg at level on logger unless a line for reason was logged
// within Every; when lines were held back it appends Key and their count.
func (l *Limiter) Log(logger *slog.Logger, level slog.Level, reason, msg string, args ...any) {
	ok, suppressed := l.Allow(reason, time.Now())
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, Key, suppressed)
	}
	logger.Log(context.Background(), level, msg, args...)
}
