package httpbridge

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
)

// AuditLog is one route's handle on an audit file, opened with
// AuditFiles.Open. Routes that name the same file share one writer, so
// lines never interleave. Write never blocks. A nil *AuditLog writes
// nothing.
type AuditLog struct {
	f    *auditFile // changed only by AuditFiles.Adopt, before the handle is used
	fs   *AuditFiles
	once sync.Once
}

// AuditFiles are the audit files one owner opened, by path: the routes
// that name one file share its writer. The gateway gives each
// generation its own; Adopt hands a new generation's handles the writers
// of the generation before, so that one writer serves a file across a
// reload. The zero value is ready to use.
type AuditFiles struct {
	mu      sync.Mutex
	files   map[string]*auditFile  // by absolute path ("-": standard output)
	handles map[string][]*AuditLog // Open's, by the same key
}

// Open opens (or joins) the audit log at path ("-": standard output),
// creating the file with mode 0640 and appending to it. The first
// opener's log and metrics serve every handle on the file. The file stays
// open until every handle on its writer is closed; Close each handle
// once.
func (fs *AuditFiles) Open(path string, log *slog.Logger, m *Metrics) (*AuditLog, error) {
	key, err := auditKey(path)
	if err != nil {
		return nil, err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.files[key]
	if f == nil || !f.acquire(1) { // none, or its last handle closed it
		w, err := openAuditFile(key)
		if err != nil {
			return nil, err
		}
		f = startAudit(key, w, DefaultAuditQueue, log, m)
		f.refs = 1
		if fs.files == nil {
			fs.files, fs.handles = make(map[string]*auditFile), make(map[string][]*AuditLog)
		}
		fs.files[key], fs.handles[key] = f, nil
	}
	a := &AuditLog{f: f, fs: fs}
	fs.handles[key] = append(fs.handles[key], a)
	return a, nil
}

// Adopt makes the handles fs opened on a path that prev has open write
// through prev's writer of it, and stops the writer fs opened for the
// path: one writer per file across the two owners (a reload's new and
// old generation), so that their lines never interleave. prev's handles
// are untouched; the shared writer stops with the last handle of either.
// Call it before fs's handles are used; nil prev adopts nothing.
func (fs *AuditFiles) Adopt(prev *AuditFiles) {
	if prev == nil || prev == fs {
		return
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	prev.mu.Lock()
	defer prev.mu.Unlock()
	for key, f := range fs.files {
		pf := prev.files[key]
		hs := fs.handles[key]
		if pf == nil || pf == f || len(hs) == 0 || !pf.acquire(len(hs)) {
			continue // prev has no live writer of the file: fs's own serves
		}
		for _, h := range hs {
			h.f = pf
		}
		fs.files[key] = pf
		if f.release(len(hs)) {
			_ = f.stop() // wrote nothing: no handle of fs was used yet
		}
	}
}

// Close releases every handle fs opened (the owner is retired): a file
// closes once no other owner's handle uses its writer.
func (fs *AuditFiles) Close() error {
	fs.mu.Lock()
	var all []*AuditLog
	for _, hs := range fs.handles {
		all = append(all, hs...)
	}
	fs.mu.Unlock()
	var first error
	for _, a := range all {
		if err := a.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Reopen reopens every file fs has open (SIGHUP, reload: logrotate moved
// it away).
func (fs *AuditFiles) Reopen() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, hs := range fs.handles {
		for _, a := range hs {
			a.Reopen()
		}
	}
}

func auditKey(path string) (string, error) {
	if path == "-" {
		return path, nil
	}
	if path == "" {
		return "", fmt.Errorf(`audit_log: want a file path or "-" for standard output`)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("audit_log %q: %w", path, err)
	}
	return abs, nil
}

// Close releases the handle; the last one on its writer writes what is
// queued, closes the file and waits for the writer. Later calls do
// nothing.
func (a *AuditLog) Close() error {
	if a == nil {
		return nil
	}
	var err error
	a.once.Do(func() {
		if a.f.release(1) {
			err = a.f.stop()
		}
	})
	return err
}

// acquire adds n handles to the writer; false when it has stopped (its
// last handle was closed).
func (f *auditFile) acquire(n int) bool {
	f.refMu.Lock()
	defer f.refMu.Unlock()
	if f.refs <= 0 {
		return false
	}
	f.refs += n
	return true
}

// release removes n handles; true for the caller that released the
// last, which stops the writer.
func (f *auditFile) release(n int) bool {
	f.refMu.Lock()
	defer f.refMu.Unlock()
	if f.refs <= 0 {
		return false
	}
	f.refs -= n
	return f.refs <= 0
}
