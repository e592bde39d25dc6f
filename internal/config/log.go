package config

import (
	"os"
	"path/filepath"
)

// Values of log.access other than a file name.
const (
	AccessLogStderr = "stderr" // with the process log, on standard error
	AccessLogOff    = "off"    // no connection lines (the metrics still count every connection)
)

// DefaultAccessLog is log.access when the file sets none.
const DefaultAccessLog = AccessLogStderr

// Log is the log: section.
type Log struct {
	// Access is log.access, where the connection lines go:
	// AccessLogStderr, AccessLogOff, or the absolute name of a file they
	// are appended to (created mode 0640 if missing, reopened on SIGHUP
	// and on every reload, so that logrotate works).
	Access string
}

// log parses the log: section.
func (p *parser) log(top fields) Log {
	f := p.mapping(top.get("log"), "log", top.keyLine("log"), "access")
	const want = `"stderr", "off", or a file name such as "/var/log/snigate/access.log"`
	n := f.get("access")
	if n == nil {
		return Log{Access: DefaultAccessLog}
	}
	s, ok := p.scalar(n, f.key("access"), want)
	switch {
	case !ok:
		return Log{Access: DefaultAccessLog}
	case s == AccessLogStderr || s == AccessLogOff:
		return Log{Access: s}
	case s == "":
		p.errorf(n.Line, f.key("access"), "want %s, got an empty string", want)
		return Log{Access: DefaultAccessLog}
	}
	path := p.pathAt(f, "access")
	p.checkLogFile(n.Line, f.key("access"), path)
	return Log{Access: path}
}

// checkLogFile checks that path can be a log file: its directory exists
// and it is not a directory itself. Whether the gateway may write to it
// is found when it opens it.
func (p *parser) checkLogFile(line int, key, path string) {
	if p.skipFiles {
		return
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		p.errorf(line, key, "%s is a directory: want a file name in it, such as %s", path, filepath.Join(path, "access.log"))
		return
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		p.errorf(line, key, "directory %s does not exist: create it (writable by the gateway's user) or name another file", dir)
	}
}
