package admin

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// UnixPrefix marks an admin address as a unix socket path: "unix:/run/snigate/admin.sock".
const UnixPrefix = "unix:"

// SocketMode is the permission of the admin unix socket: only its owner may
// connect, because the runtime API has no authentication.
const SocketMode os.FileMode = 0o600

// staleDialTimeout bounds the probe that tells a live socket from a stale one.
const staleDialTimeout = time.Second

// Listen opens the admin listener for addr, in the form of listen.admin:
// "host:port" for TCP, or "unix:/path" for a unix socket created with mode
// 0600 (see listenUnix). The caller owns the listener; closing a unix
// listener removes its socket file.
func Listen(addr string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, UnixPrefix); ok {
		return listenUnix(path)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listener %s: %w", addr, err)
	}
	return ln, nil
}

// listenUnix creates the socket at path, mode 0600, without a window in which
// anyone else could connect and without touching the process umask (which is
// process-wide and would race with other goroutines creating files):
//
//  1. the socket is bound inside a fresh directory created with mode 0700
//     next to path (same file system), so nobody but us can reach it there,
//     whatever mode the umask gave it;
//  2. it is chmod-ed to 0600;
//  3. it is renamed onto path. rename(2) is atomic: path is either absent,
//     the stale socket it replaces, or our socket with mode 0600.
//
// A file already at path is checked first: a socket that accepts a connection
// belongs to a running process (error); a socket that refuses is stale and
// is replaced by the rename; anything that is not a socket is an error and
// is left alone. (Two processes started at the same instant on one path
// could both pass the check; the later rename wins. Nothing else is racy.)
func listenUnix(path string) (net.Listener, error) {
	if path == "" {
		return nil, errors.New(`admin listener "unix:": want a socket path such as "unix:/run/snigate/admin.sock"`)
	}
	path = filepath.Clean(path)
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".admin-")
	if err != nil {
		return nil, fmt.Errorf("admin listener unix:%s: create a private directory beside it: %w", path, err)
	}
	defer os.RemoveAll(dir)
	ln, err := bindPrivate(filepath.Join(dir, "s"))
	if err != nil {
		return nil, fmt.Errorf("admin listener unix:%s: %w", path, err)
	}
	if err := os.Rename(filepath.Join(dir, "s"), path); err != nil {
		ln.Close()
		return nil, fmt.Errorf("admin listener unix:%s: move the socket into place: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("admin listener unix:%s: %w", path, err)
	}
	return &unixListener{UnixListener: ln, path: path, file: fi}, nil
}

// bindPrivate binds a unix socket at tmp (inside a 0700 directory) and sets
// its mode to SocketMode.
func bindPrivate(tmp string) (*net.UnixListener, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, err
	}
	// The file moves away from tmp: unixListener removes the final path.
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, SocketMode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("set socket mode: %w", err)
	}
	return ln, nil
}

// checkSocketPath returns nil when path is free or holds a stale socket.
func checkSocketPath(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("admin listener unix:%s: %w", path, err)
	case fi.Mode()&os.ModeSocket == 0:
		return fmt.Errorf("admin listener unix:%s: the path exists and is not a socket (%s); remove it or choose another path", path, fi.Mode().Type())
	}
	c, err := net.DialTimeout("unix", path, staleDialTimeout)
	if err == nil {
		c.Close()
		return fmt.Errorf("admin listener unix:%s: another process is listening on this socket; is snigate already running?", path)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil // stale: left by a process that died; the rename replaces it
	}
	return fmt.Errorf("admin listener unix:%s: cannot tell whether the existing socket is in use: %w", path, err)
}

// unixListener reports the final socket path as its address and removes the
// socket file on Close, unless another process has replaced it meanwhile.
type unixListener struct {
	*net.UnixListener
	path string
	file os.FileInfo
	once sync.Once
}

func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

func (l *unixListener) Close() error {
	l.once.Do(l.removeSocket)
	return l.UnixListener.Close()
}

// KeepSocketFile makes Close leave the socket file in place: the listening
// socket was handed to another process (an upgrade), which serves it now.
func (l *unixListener) KeepSocketFile() { l.once.Do(func() {}) }

func (l *unixListener) removeSocket() {
	if fi, err := os.Lstat(l.path); err == nil && os.SameFile(fi, l.file) {
		os.Remove(l.path)
	}
}

// IsLoopbackAddr reports whether an admin address can only be reached from
// this host: a unix socket, "localhost", or a loopback IP such as 127.0.0.1
// or [::1]. An empty host (":9090") listens on every interface and is not
// loopback. The gateway warns when the unauthenticated runtime API listens
// elsewhere.
func IsLoopbackAddr(addr string) bool {
	if strings.HasPrefix(addr, UnixPrefix) {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
