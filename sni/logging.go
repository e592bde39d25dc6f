package sni

import (
	"sync"
	"time"
)

// warnLimiter lets one Warn line per reason through per interval and
// counts the ones it holds back; metrics count every occurrence anyway.
type warnLimiter struct {
	every time.Duration
	mu    sync.Mutex
	state map[string]*warnState
}

type warnState struct {
	last       time.Time
	suppressed int
}

// allow reports whether a Warn for reason may be logged at now, and how
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
	if !st.last.IsZero() && now.Sub(st.last) < w.every {
		st.suppressed++
		return false, 0
	}
	n := st.suppressed
	st.last, st.suppressed = now, 0
	return true, n
}

// warnf logs msg at Warn, rate-limited per reason (a result, optionally
// qualified, such as "upstream_error/registry").
func (s *Server) warnf(reason, msg string, args ...any) {
	ok, suppressed := s.warn.allow(reason, time.Now())
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	s.log.Warn(msg, args...)
}
