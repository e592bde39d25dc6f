package snigate

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/filewatch"
)

// watcher re-reads the snigate configuration file when it changes and
// swaps in a new policy. A file that goes missing or is changed into an
// invalid one is logged and counted once, and the last good policy stays
// in force until the file changes again.
//
// Changes are noticed by snigate's one file watcher (internal/filewatch)
// in its poll-only mode: the file's identity (inode, size, times) is
// compared every `reload` period, CoreDNS's meaning of reload, so an
// atomic rename, a Kubernetes volume's symlink swap and an in-place write
// are each one change.
type watcher struct {
	path    string
	build   func(*config.Config) (*dnsresponder.Policy, int, error)
	store   func(*dnsresponder.Policy)
	log     logger
	metrics *Metrics

	file *filewatch.Watcher // calls check; nil with reload 0
}

// newWatcher records the file's identity before it is first read, so that
// a change during the read is seen by the first poll. interval 0 builds a
// watcher that reads the file once and never follows it.
func newWatcher(w *watcher, interval time.Duration) (*watcher, error) {
	if interval <= 0 {
		return w, nil
	}
	var err error
	w.file, err = filewatch.New(filewatch.Config{File: w.path, ChangedFunc: w.check,
		PollInterval: interval, PollOnly: true})
	return w, err
}

// loadFirst reads the file at setup; any error fails the setup.
func (w *watcher) loadFirst() error {
	if _, err := os.Stat(w.path); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	n, err := w.load()
	if err != nil {
		return err
	}
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

// Run checks the file every reload period until ctx is done.
func (w *watcher) Run(ctx context.Context) { w.file.Run(ctx) }

// check reloads the file after its identity changed: once per change, so a
// file that stays missing or broken is reported once.
func (w *watcher) check() {
	if _, err := os.Stat(w.path); err != nil {
		w.fail(fmt.Errorf("config: %w", err))
		return
	}
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
