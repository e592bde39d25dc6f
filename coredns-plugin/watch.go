package snigate

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/internal/config"
)

// watcher re-reads the snigate configuration file when it changes and
// swaps in a new policy. A file that goes missing or is changed into an
// invalid one is logged and counted once, and the last good policy stays
// in force until the file changes again.
type watcher struct {
	path     string
	interval time.Duration
	build    func(*config.Config) (*dnsresponder.Policy, int, error)
	store    func(*dnsresponder.Policy)
	log      logger
	metrics  *Metrics

	seen fileStamp // the file as last looked at, good or bad; zero: missing
}

// fileStamp tells whether a file changed: an in-place write changes the
// size or the modification time, an atomic rename or a Kubernetes volume's
// symlink swap changes the inode.
type fileStamp struct {
	modTime time.Time
	size    int64
	inode   uint64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{modTime: fi.ModTime(), size: fi.Size(), inode: inode(fi)}, nil
}

// loadFirst reads the file at setup; any error fails the setup.
func (w *watcher) loadFirst() error {
	st, err := stampOf(w.path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	n, err := w.load()
	if err != nil {
		return err
	}
	w.seen = st
	w.log.Infof("loaded %d routed names from %s", n, w.path)
	return nil
}

// load reads and applies the file, returning the number of name patterns.
func (w *watcher) load() (int, error) {
	cfg, err := config.LoadWithoutFiles(w.path)
	if err != nil {
		return 0, fmt.Errorf("config: %w", err) // config's errors name the file and line
	}
	p, n, err := w.build(cfg)
	if err != nil {
		return 0, fmt.Errorf("config %s: %w", w.path, err)
	}
	w.store(p)
	return n, nil
}

// Run checks the file every interval until ctx is done.
func (w *watcher) Run(ctx context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.check()
		}
	}
}

// check reloads the file if its stamp changed since it was last seen.
func (w *watcher) check() {
	st, err := stampOf(w.path)
	if err != nil {
		if w.seen != (fileStamp{}) {
			w.seen = fileStamp{}
			w.fail(fmt.Errorf("config: %w", err))
		}
		return
	}
	if st == w.seen {
		return
	}
	w.seen = st
	n, err := w.load()
	if err != nil {
		w.fail(err)
		return
	}
	w.metrics.reloaded(resultSuccess)
	w.log.Infof("reloaded %d routed names from %s", n, w.path)
}

func (w *watcher) fail(err error) {
	w.metrics.reloaded(resultFailure)
	w.log.Errorf("%v; keeping the routed names from the last good load", err)
}
