package dnsresponder

import (
	"log/slog"
	"strings"
	"time"

	"github.com/snigate/snigate/internal/ratelog"
)

// warnEvery is how often at most a warning about bad queries is logged per
// result; the metrics count every one.
const warnEvery = time.Minute

// warnLimiter logs client faults at Warn, at most once per warnEvery for
// each result, saying how many were left out since the last line.
type warnLimiter struct {
	logger *slog.Logger
	lim    ratelog.Limiter
}

func newWarnLimiter(logger *slog.Logger) *warnLimiter {
	return &warnLimiter{logger: logger, lim: ratelog.Limiter{Every: warnEvery}}
}

// log warns about a bad query from client ("" when unknown), answered as
// result, unless one was logged for result within warnEvery.
func (l *warnLimiter) log(result, client string, err error) {
	l.logMsg("dns: bad query", result, client, err)
}

// logMsg warns msg about a query from client, unless one was logged for
// key within warnEvery; the line's result is key's first word. Unlike
// ratelog.Limiter.Log, the line always carries the count (0 included).
func (l *warnLimiter) logMsg(msg, key, client string, err error) {
	ok, left := l.lim.Allow(key, time.Now())
	if !ok {
		return
	}
	result, _, _ := strings.Cut(key, " ")
	l.logger.Warn(msg, "client", client, "result", result, "err", err, ratelog.Key, left)
}
