package regcache

import (
	"fmt"
	"github.com/snigate/snigate/internal/ratelog"
	"time"
)

// faultLogEvery rate-limits the Error line of cache failures, per reason;
// snigate_cache_errors_total counts every one.
const faultLogEvery = 10 * time.Second

// fault records a failure of the cache's own disk (counted, logged at
// Error at most every faultLogEvery per reason) and returns the error for
// the caller, which matches ErrBypass.
func (c *Cache) fault(op string, err error) error {
	reason := faultReason(err)
	c.counts.errors.Add(1)
	addCounter(c.m.errors[reason], 1)
	c.logFault(reason, op, err, time.Now())
	return fmt.Errorf("%w: %s: %w", ErrBypass, op, err)
}

func (c *Cache) logFault(reason, op string, err error, now time.Time) {
	ok, suppressed := c.faultLog.Allow(reason, now)
	if !ok {
		return
	}
	c.log.Error("cache failed: requests bypass it and are served from upstream",
		"route", c.cfg.Route, "dir", c.cfg.Dir, "reason", reason, "op", op, "err", err,
		ratelog.Key, suppressed)
}
