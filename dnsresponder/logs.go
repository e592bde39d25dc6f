package dnsresponder

import (
	"log/slog"
	"strings"
	"sync"
	"time"
)

// warnEvery is how often at most a warning about bad queries is logged per
// result; the metrics count every one.
const warnEvery = time.Minute

// warnLimiter logs client faults at Warn, at most once per warnEvery for
// each result, saying how many were left out since the last line.
type warnLimiter struct {
	logger *slog.Logger
	now    func() time.Time

	mu   sync.Mutex
	last map[string]time.Time // result -> time of its last line
	left map[string]int       // result -> warnings left out since
}

func newWarnLimiter(logger *slog.Logger) *warnLimiter {
	return &warnLimiter{
		logger: logger,
		now:    time.Now,
		last:   make(map[string]time.Time),
		left:   make(map[string]int),
	}
}

// log warns about a bad query from client ("" when unknown), answered as
// result, unless one was logged for result within warnEvery.
func (l *warnLimiter) log(result, client string, err error) {
	l.logMsg("dns: bad query", result, client, err)
}

// logMsg warns msg about a query from client, unless one was logged for
// key within warnEvery; the line's result is key's first word.
func (l *warnLimiter) logMsg(msg, key, client string, err error) {
	now := l.now()
	l.mu.Lock()
	if last, ok := l.last[key]; ok && now.Sub(last) < warnEvery {
		l.left[key]++
		l.mu.Unlock()
		return
	}
	left := l.left[key]
	l.last[key], l.left[key] = now, 0
	l.mu.Unlock()
	result, _, _ := strings.Cut(key, " ")
	l.logger.Warn(msg, "client", client, "result", result, "err", err, "suppressed", left)
}
