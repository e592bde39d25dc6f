package gateway

import (
	"log/slog"
	"sync"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/logfile"
)

// accessLog is where the connection lines go (log.access): the process
// log, nowhere, or a file in the process log's format, reopened on every
// reload and SIGHUP so that logrotate works.
type accessLog struct {
	format string // of the process log: "text" or "json"

	mu     sync.Mutex
	file   *logfile.File // open while log.access names a file
	logger *slog.Logger  // for sni.Config.AccessLog; nil: the process log
	// retired is the file of the destination before the last apply,
	// closed at the next apply or close: connections that end while the
	// SNI server still has the old logger write their lines to it.
	retired *logfile.File
}

// apply sends the connection lines to dest, a value of log.access: it
// opens the file dest names, or reopens it when it is the file in use. On
// error the destination in force stays.
func (a *accessLog) apply(dest string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.retired != nil {
		a.retired.Close()
		a.retired = nil
	}
	switch dest {
	case config.AccessLogStderr, "":
		a.retired, a.file, a.logger = a.file, nil, nil
		return nil
	case config.AccessLogOff:
		a.retired, a.file, a.logger = a.file, nil, slog.New(slog.DiscardHandler)
		return nil
	}
	if a.file != nil {
		return a.file.ReopenAt(dest)
	}
	f, err := logfile.Open(dest)
	if err != nil {
		return err
	}
	h, err := newHandler(f, a.format, slog.LevelInfo)
	if err != nil {
		f.Close()
		return err
	}
	a.file, a.logger = f, slog.New(h)
	return nil
}

// reopen opens the file in use again, if there is one: a SIGHUP whose
// reload was rejected still moves to the file logrotate left.
func (a *accessLog) reopen() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.file == nil {
		return nil
	}
	return a.file.Reopen()
}

// current returns the logger for the connection lines; nil: the process log.
func (a *accessLog) current() *slog.Logger {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.logger
}

// close closes the files, once the SNI server has stopped.
func (a *accessLog) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, f := range []*logfile.File{a.file, a.retired} {
		if f != nil {
			f.Close()
		}
	}
	a.file, a.retired = nil, nil
}

// openAccessLog opens cfg's log.access at the start of Run; the error
// names the key.
func (g *Gateway) openAccessLog(cfg *config.Config) error {
	if err := g.access.apply(cfg.Log.Access); err != nil {
		return config.ErrorList{cfg.ErrorAt("log.access", "cannot write the access log: %v", err)}
	}
	return nil
}
