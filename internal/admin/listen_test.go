package admin

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// sockPath returns a socket path in a fresh directory. t.TempDir can be
// long; unix socket paths are limited to 108 bytes.
func sockPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "adm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "admin.sock")
}

func TestListenTCP(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ln.Addr().Network() != "tcp" {
		t.Errorf("network = %s, want tcp", ln.Addr().Network())
	}
}

func TestListenErrors(t *testing.T) {
	tests := []struct {
		name, addr, want string
	}{
		{"empty unix path", "unix:", "want a socket path"},
		{"missing directory", "unix:/nonexistent-snigate-dir/admin.sock", "/nonexistent-snigate-dir/admin.sock"},
		{"bad TCP address", "127.0.0.1", "admin listener 127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := Listen(tt.addr)
			if err == nil {
				ln.Close()
				t.Fatal("Listen succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// The socket mode must be 0600 whatever the umask: with umask 0 a plain
// bind would create it 0777.
func TestListenUnixMode(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := sockPath(t)
	ln, err := Listen(UnixPrefix + path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want a socket with 0600", fi.Mode())
	}
	if got := ln.Addr().String(); got != path {
		t.Errorf("Addr = %q, want %q", got, path)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the socket (no private directory left behind)", len(entries))
	}
	if c, err := net.Dial("unix", path); err != nil {
		t.Errorf("dial the socket: %v", err)
	} else {
		c.Close()
	}
	ln.Close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("socket file still there after Close: %v", err)
	}
}

func TestListenUnixExistingFile(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string) (cleanup func())
		wantErr string // "" : Listen must succeed
	}{
		{name: "stale socket is replaced", prepare: staleSocket},
		{name: "live socket is kept", prepare: liveSocket, wantErr: "another process is listening"},
		{name: "regular file is kept", prepare: regularFile, wantErr: "is not a socket"},
		{name: "directory is kept", prepare: directory, wantErr: "is not a socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := sockPath(t)
			defer tt.prepare(t, path)()
			before, _ := os.Lstat(path)
			ln, err := Listen(UnixPrefix + path)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				fi, _ := os.Lstat(path)
				if os.SameFile(fi, before) || fi.Mode().Perm() != 0o600 {
					t.Errorf("stale socket not replaced by a 0600 one: %v", fi.Mode())
				}
				return
			}
			if err == nil {
				ln.Close()
				t.Fatal("Listen succeeded")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if after, err := os.Lstat(path); err != nil || !os.SameFile(before, after) {
				t.Errorf("the existing file was touched: %v", err)
			}
		})
	}
}

func staleSocket(t *testing.T, path string) func() {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false) // as if the process had died
	ln.Close()
	return func() {}
}

func liveSocket(t *testing.T, path string) func() {
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		// The live listener must still work after the failed Listen.
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Errorf("the running listener lost its socket: %v", err)
		} else {
			c.Close()
		}
		ln.Close()
	}
}

func regularFile(t *testing.T, path string) func() {
	if err := os.WriteFile(path, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if data, _ := os.ReadFile(path); string(data) != "keep me" {
			t.Errorf("file content changed to %q", data)
		}
	}
}

func directory(t *testing.T, path string) func() {
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return func() {}
}

// Close must not delete a socket that another process put at the path
// since (a second snigate started by mistake, then stopped).
func TestListenUnixCloseKeepsForeignFile(t *testing.T) {
	path := sockPath(t)
	ln, err := Listen(UnixPrefix + path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("other"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("Close removed a file that was not its socket: %v", err)
	}
}

func TestIsLoopbackAddr(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:9090", true},
		{"127.1.2.3:9090", true},
		{"[::1]:9090", true},
		{"localhost:9090", true},
		{"LOCALHOST.:9090", true},
		{"unix:/run/snigate/admin.sock", true},
		{":9090", false},
		{"0.0.0.0:9090", false},
		{"[::]:9090", false},
		{"10.0.0.1:9090", false},
		{"admin.example.com:9090", false},
		{"127.0.0.1", false}, // not an address
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if got := IsLoopbackAddr(tt.addr); got != tt.want {
				t.Errorf("IsLoopbackAddr(%q) = %v, want %v", tt.addr, got, tt.want)
			}
		})
	}
}
