package regcache

import (
	"context"
	"errors"
	"fmt"
	"github.com/snigate/snigate/internal/ratelog"
	"log/slog"
	"os"
	"sync"
	"time"
)

// DefaultFillIdleTimeout is how long a fill waits for the next byte from
// upstream before it fails (Config.FillIdleTimeout's zero value).
const DefaultFillIdleTimeout = time.Minute

// Config is what Open needs. Route, Logger and Metrics may be left zero.
type Config struct {
	// Route names the route in logs and metric labels.
	Route string
	// Dir is the cache's own directory (routes[].http.cache.dir), created if
	// missing. Required. One Cache per directory: Open refuses a directory
	// another Cache (in this process or another) has open.
	Dir string
	// MaxSize is the most bytes of content kept (routes[].http.cache.max_size);
	// least recently used content is removed beyond it. Required, > 0.
	MaxSize int64
	// FillIdleTimeout fails a fill that receives no byte from upstream for
	// this long, so that a stalled upstream does not hold a digest forever.
	// Zero: DefaultFillIdleTimeout; negative: no limit.
	FillIdleTimeout time.Duration
	// WaitForLock: when another process holds the directory (the previous
	// snigate of an upgrade, draining), Open does not fail: the Cache holds
	// nothing and bypasses (Stats().Unavailable says why) until the lock
	// is free, tried every LockRetry, then it opens the directory as Open
	// would. Without it, a directory in use is Open's error.
	WaitForLock bool
	// Logger receives lifecycle lines and rate-limited errors. Nil: slog.Default().
	Logger *slog.Logger
	// Metrics, built once per process by NewMetrics. Nil: nothing recorded.
	Metrics *Metrics
}

// Cache is a content-addressed store of registry content in one
// directory, for one route. It is safe for concurrent use. The caller
// closes it with Close; Entries it returned stay readable after that.
type Cache struct {
	cfg  Config
	log  *slog.Logger
	m    routeMetrics
	lock *os.File // holds the directory's flock; nil when unavailable

	ctx    context.Context // cancelled by Close: stops fills
	cancel context.CancelFunc
	wg     sync.WaitGroup // fill goroutines

	mu          sync.Mutex
	idx         index
	fills       map[string]*fill // in flight, by digest
	reserved    int64            // announced sizes of fills in flight
	spills      int              // fills in flight that spilled (spill.go)
	maxSize     int64
	closed      bool
	unavailable error // why the directory could not be opened, nil when fine

	pinned   map[string]bool // hex digests never evicted (pin.go)
	tags     tags            // remembered tags (tags.go)
	counts   counts
	hooks    hooks           // tests only
	faultLog ratelog.Limiter // the Error line of faults, per reason (faults.go)
}

// Open opens the cache in cfg.Dir: it creates the directory, takes its
// lock, removes what a crash left of fills in progress, and rebuilds the
// index from the files' names and metadata (no hashing: a file is verified
// before it is first served). It starts no goroutine.
//
// It fails only for a bad Config or a directory in use by another Cache.
// When the directory cannot be created or read (permissions, a missing
// mount), the error is logged and counted and the Cache it returns holds
// nothing: every Fill returns an error matching ErrBypass, so the route
// goes on serving from upstream. Stats().Unavailable says why.
func Open(cfg Config) (*Cache, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := newCache(cfg)
	if err := c.prepare(); err != nil {
		if errors.Is(err, errLocked) && cfg.WaitForLock {
			c.waitForLock(err)
			return c, nil
		}
		if errors.Is(err, errLocked) {
			return nil, err
		}
		c.unavailable = c.fault("open cache directory", err)
		return c, nil
	}
	c.rebuild()
	return c, nil
}

func (cfg *Config) validate() error {
	switch {
	case cfg.Dir == "":
		return errors.New("regcache: Config.Dir is empty: give the cache a directory of its own")
	case cfg.MaxSize <= 0:
		return fmt.Errorf("regcache: Config.MaxSize is %d: give a positive size such as 50GiB", cfg.MaxSize)
	}
	if cfg.FillIdleTimeout == 0 {
		cfg.FillIdleTimeout = DefaultFillIdleTimeout
	}
	return nil
}

func newCache(cfg Config) *Cache {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cache{
		cfg: cfg, log: log, m: cfg.Metrics.forRoute(cfg.Route),
		ctx: ctx, cancel: cancel,
		idx: newIndex(), fills: map[string]*fill{}, maxSize: cfg.MaxSize,
		faultLog: ratelog.Limiter{Every: faultLogEvery},
	}
	c.publishSize()
	return c
}

// hooks let tests synchronise on the cache's own steps; nil funcs do
// nothing. Production code never sets them.
type hooks struct {
	joined func(d string) // a caller joined (or started) a fill, before its first byte
	stored func(d string) // a fill ended: stored, or not to be kept
	waits  func(d string) // a reader waits for a fill's next change
}

// Route is the route the cache belongs to (Config.Route).
func (c *Cache) Route() string { return c.cfg.Route }

// Dir is the cache's directory (Config.Dir).
func (c *Cache) Dir() string { return c.cfg.Dir }

// SetMaxSize changes MaxSize (a reload that kept the directory), removing
// least recently used content at once if the cache is now over it.
// n <= 0 is ignored.
func (c *Cache) SetMaxSize(n int64) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxSize = n
	c.evictLocked()
}

// Close stops the fills in flight (their readers get an error), waits for
// their goroutines and releases the directory. Entries of stored content
// stay readable until their own Close. It is safe to call more than once.
func (c *Cache) Close() error {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	if already || c.lock == nil {
		return nil
	}
	if err := c.saveTags(); err != nil {
		c.log.Warn("closing the cache: the tags file not written", "route", c.cfg.Route, "err", err)
	}
	return c.lock.Close() // releases the flock
}
