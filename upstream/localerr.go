package upstream

import (
	"errors"
	"github.com/snigate/snigate/internal/ratelog"
	"syscall"
	"time"
)

// localErrorLogEvery rate-limits the Error line of local check failures.
const localErrorLogEvery = 10 * time.Second

// resultLocalError is the result of a check that could not run because
// this process lacked a resource (snigate_health_checks_total).
const resultLocalError = "local_error"

// localError reports whether err is this process's own failure to open a
// connection (out of file descriptors, socket buffers or memory): it says
// nothing about the upstream. Counting it as a failed check took every
// upstream of every route down at once, and kept them down for rise x
// interval after the descriptors came back.
func localError(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// localFailed records a check that could not run: counted, logged at
// Error at most every localErrorLogEvery per pool, and the host's health
// left as it was.
func (p *Pool) localFailed(h *Host, err error, now time.Time) {
	p.cfg.Metrics.countCheck(p.Route(), h.addr, resultLocalError)
	ok, suppressed := p.localLog.Allow(resultLocalError, now)
	if !ok {
		return
	}
	args := []any{"route", p.Route(), "upstream", h.addr, "err", err}
	if suppressed > 0 {
		args = append(args, ratelog.Key, suppressed)
	}
	p.log.Error("health check could not run: this process is out of a resource (raise the file descriptor limit?); the upstream's health is unchanged", args...)
}
