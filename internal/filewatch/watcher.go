package filewatch

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Defaults of Config.
const (
	// DefaultPollInterval is how often the file's identity is compared as
	// the backstop to file-system events.
	DefaultPollInterval = 2 * time.Second
	// DefaultSettleDelay is how long the directory must stay quiet after an
	// event before the file is looked at, so that a burst of writes is one
	// change, read whole.
	DefaultSettleDelay = 50 * time.Millisecond
)

// Config configures a Watcher.
type Config struct {
	File string // the file to watch; symlinks are followed. Required.

	// ChangedFunc is called on Run's goroutine when the file's identity
	// changed (including to and from missing), or after an event that
	// named the file. Required.
	ChangedFunc func()

	// Since is the identity of the version the caller last read (Stat
	// taken before reading it); Run reports a file that differs from it.
	// Zero: the identity at New.
	Since ID

	PollInterval time.Duration // identity poll; zero: DefaultPollInterval
	SettleDelay  time.Duration // quiet time after events; zero: DefaultSettleDelay

	// PollOnly skips fsnotify: the file is looked at every PollInterval
	// only (file systems without inotify; a caller whose contract is a
	// check period, as CoreDNS's reload is).
	PollOnly bool

	Logger *slog.Logger // nil: slog.Default()
}

// Watcher calls Config.ChangedFunc when its file changes.
type Watcher struct {
	cfg   Config
	log   *slog.Logger
	last  ID              // identity at New or at the last report; Run's goroutine only
	named bool            // an event named the file since the last look
	dirs  map[string]bool // directories given to fsnotify
}

// New records the file's identity now (or takes Config.Since), so that a
// change before Run is noticed by Run. It opens and starts nothing.
func New(cfg Config) (*Watcher, error) {
	if cfg.File == "" || cfg.ChangedFunc == nil {
		return nil, errors.New("filewatch: want a File and a ChangedFunc")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.SettleDelay <= 0 {
		cfg.SettleDelay = DefaultSettleDelay
	}
	w := &Watcher{cfg: cfg, log: cfg.Logger, last: cfg.Since, dirs: map[string]bool{}}
	if w.last.Missing() {
		w.last = Stat(cfg.File)
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	return w, nil
}

// Run watches until ctx is done, then returns nil once its goroutines
// (fsnotify's reader) have finished. A change since New (or Since) is
// reported after the settle delay. Call it once.
func (w *Watcher) Run(ctx context.Context) error {
	var events <-chan fsnotify.Event
	var errs <-chan error
	var fw *fsnotify.Watcher
	if !w.cfg.PollOnly {
		if fw = w.watch(); fw != nil {
			defer fw.Close()
			events, errs = fw.Events, fw.Errors
		}
	}
	tick := time.NewTicker(w.cfg.PollInterval)
	defer tick.Stop()
	// The first look, after the settle delay, reports a change made before
	// the watch was set up.
	settle := time.NewTimer(w.cfg.SettleDelay)
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			w.event(ev)
			settle.Reset(w.cfg.SettleDelay)
		case _, ok := <-errs:
			// An overflow means lost events: the poll covers them.
			if !ok {
				errs = nil
			}
		case <-settle.C:
			w.look(fw)
		case <-tick.C:
			w.look(fw)
		}
	}
}

// look reports a change: the identity differs from the last one reported,
// or an event named the file.
func (w *Watcher) look(fw *fsnotify.Watcher) {
	id, named := Stat(w.cfg.File), w.named
	w.named = false
	if id == w.last && !named {
		return
	}
	w.last = id
	if fw != nil {
		w.addDirs(fw) // a symlink may now point elsewhere
	}
	w.cfg.ChangedFunc()
}

// event notes what an fsnotify event means for the next look: the file was
// named, or a watched directory is gone (fsnotify dropped its watch, so it
// is added again if it comes back).
func (w *Watcher) event(ev fsnotify.Event) {
	if w.dirs[ev.Name] && ev.Has(fsnotify.Remove) {
		delete(w.dirs, ev.Name)
	}
	w.named = w.named || w.names(ev.Name)
}

// names reports whether an event's path is the file or its symlink target.
func (w *Watcher) names(path string) bool {
	if path == w.cfg.File {
		return true
	}
	real, err := filepath.EvalSymlinks(w.cfg.File)
	return err == nil && path == real
}

// watch starts fsnotify on the directories that hold the file, or returns
// nil if it cannot (the poll still runs). The caller closes it.
func (w *Watcher) watch() *fsnotify.Watcher {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		w.log.Warn("cannot watch for file changes; polling only", "file", w.cfg.File,
			"poll", w.cfg.PollInterval.String(), "err", err)
		return nil
	}
	w.addDirs(fw)
	return fw
}

// addDirs watches the file's directory and, for a symlink, its target's
// (Kubernetes mounts NAME -> ..data/NAME, ..data -> ..TIMESTAMP).
func (w *Watcher) addDirs(fw *fsnotify.Watcher) {
	for _, dir := range dirsOf(w.cfg.File) {
		if w.dirs[dir] {
			continue
		}
		if err := fw.Add(dir); err != nil {
			w.log.Warn("cannot watch directory; polling it", "file", w.cfg.File, "dir", dir, "err", err)
			continue
		}
		w.dirs[dir] = true
	}
}

// dirsOf is the file's directory and, if the file is a symlink, the
// directory its target is in.
func dirsOf(file string) []string {
	dirs := []string{filepath.Dir(file)}
	if real, err := filepath.EvalSymlinks(file); err == nil && filepath.Dir(real) != dirs[0] {
		dirs = append(dirs, filepath.Dir(real))
	}
	return dirs
}
