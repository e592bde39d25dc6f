package regcache

import (
	"errors"
	"fmt"
	"time"
)

// LockRetry is how often a Cache opened with WaitForLock tries the lock of
// its directory again.
var LockRetry = time.Second

// waitForLock makes c hold nothing and bypass while another process holds
// its directory (err is Open's), and takes the directory over once that
// process lets go: an upgrade's new process serves from upstream while the
// old one drains, then from the cache, which is rebuilt from the
// directory as at a start.
func (c *Cache) waitForLock(err error) {
	c.mu.Lock()
	c.unavailable = fmt.Errorf("%w: %w; serving from upstream until it is released", ErrBypass, err)
	c.mu.Unlock()
	c.log.Warn("cache directory held by another process; bypassing the cache until it is released",
		"route", c.cfg.Route, "dir", c.cfg.Dir)
	c.wg.Go(func() {
		t := time.NewTicker(LockRetry)
		defer t.Stop()
		for {
			select {
			case <-c.ctx.Done():
				return
			case <-t.C:
			}
			err := c.prepare()
			if errors.Is(err, errLocked) {
				continue
			}
			if err != nil {
				fault := c.fault("open cache directory", err)
				c.mu.Lock()
				c.unavailable = fault
				c.mu.Unlock()
				return
			}
			c.rebuild()
			c.mu.Lock()
			c.unavailable = nil
			c.mu.Unlock()
			return
		}
	})
}
