// Package logfile is a log file that logrotate can rotate: a File appends
// each Write to the file at its path, and Reopen (on SIGHUP) opens the
// path again, so that lines go to the new file once the old one was
// renamed away.
//
//	f, err := logfile.Open("/var/log/snigate/access.log")
//	logger := slog.New(slog.NewJSONHandler(f, nil))
//	...
//	err = f.Reopen() // after logrotate renamed the file
//	...
//	f.Close()
package logfile

import (
	"os"
	"sync"
)

// Mode is the permission of a file Open or Reopen creates.
const Mode = 0o640

// File is an append-only log file. Each Write is one write(2) to the file
// (O_APPEND), so whole lines from several writers, and from several
// processes, never interleave. It is safe for concurrent use.
type File struct {
	mu   sync.Mutex
	path string
	f    *os.File // nil once closed
}

// Open opens path for appending, creating it with Mode if it is missing.
func Open(path string) (*File, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	return &File{path: path, f: f}, nil
}

func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, Mode) // the *fs.PathError names path
}

// Path is the file's name.
func (l *File) Path() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.path
}

// Write appends p to the file.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, os.ErrClosed
	}
	return l.f.Write(p)
}

// Reopen opens the file's path again and writes there from now on. When
// the path cannot be opened, the file in use stays and the error says why.
func (l *File) Reopen() error { return l.ReopenAt(l.Path()) }

// ReopenAt opens path and writes there from now on, closing the file in
// use; when path cannot be opened, the file in use stays.
func (l *File) ReopenAt(path string) error {
	f, err := open(path)
	if err != nil {
		return err
	}
	l.mu.Lock()
	old := l.f
	l.f, l.path = f, path
	l.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// Close closes the file; later writes fail with os.ErrClosed.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
