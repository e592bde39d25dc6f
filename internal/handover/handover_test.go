package handover

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSameAddr(t *testing.T) {
	tcp := func(ip string, port int) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: port} }
	tests := []struct {
		name    string
		bound   net.Addr
		network string
		addr    string
		want    bool
	}{
		{"no host matches the v6 wildcard", tcp("::", 443), "tcp", ":443", true},
		{"no host matches the v4 wildcard", tcp("0.0.0.0", 443), "tcp", ":443", true},
		{"0.0.0.0 matches [::]", tcp("::", 443), "tcp", "0.0.0.0:443", true},
		{"other port", tcp("::", 443), "tcp", ":8443", false},
		{"port 0 never matches", tcp("::", 443), "tcp", ":0", false},
		{"same IP", tcp("127.0.0.1", 9090), "tcp", "127.0.0.1:9090", true},
		{"localhost resolves", tcp("127.0.0.1", 9090), "tcp", "localhost:9090", true},
		{"specific IP does not match wildcard socket", tcp("::", 443), "tcp", "10.0.0.1:443", false},
		{"wildcard does not match specific socket", tcp("10.0.0.1", 443), "tcp", ":443", false},
		{"udp", &net.UDPAddr{IP: net.IPv6unspecified, Port: 53}, "udp", ":53", true},
		{"udp is not tcp", &net.UDPAddr{IP: net.IPv6unspecified, Port: 53}, "tcp", ":53", false},
		{"unix path", &net.UnixAddr{Name: "/run/snigate/admin.sock", Net: "unix"}, "unix", "/run/snigate//admin.sock", true},
		{"other unix path", &net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, "unix", "/run/snigate/admin.sock", false},
		{"garbage address", tcp("::", 443), "tcp", "443", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameAddr(tt.bound, tt.network, tt.addr); got != tt.want {
				t.Errorf("sameAddr(%v, %q, %q) = %v, want %v", tt.bound, tt.network, tt.addr, got, tt.want)
			}
		})
	}
}

// childConfig starts this test binary as the new process in mode.
func childConfig(t *testing.T, mode, addr string, socks []Socket) SpawnConfig {
	t.Helper()
	return SpawnConfig{
		Sockets: socks,
		Path:    os.Args[0],
		Args:    []string{"-test.run=^$"},
		Env:     append(os.Environ(), envChild+"="+mode, "HANDOVER_TEST_ADDR="+addr),
		Timeout: 30 * time.Second,
	}
}

func listenerFile(t *testing.T, ln net.Listener) *os.File {
	t.Helper()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// readLine dials addr and returns the first line the server writes.
func readLine(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s after the hand-over: %v (a refused connection is what the hand-over prevents)", addr, err)
	}
	defer c.Close()
	return firstLine(t, c)
}

func firstLine(t *testing.T, c net.Conn) string {
	t.Helper()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read from %s: %v", c.RemoteAddr(), err)
	}
	return strings.TrimSpace(line)
}

func TestSpawnHandsOverListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	// A connection queued before the hand-over is served by the new
	// process once the old one closes its listener without accepting it.
	early, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	socks := []Socket{{Name: Name("listen.tls", addr), File: listenerFile(t, ln)}}
	child, err := Spawn(context.Background(), childConfig(t, "serve", addr, socks))
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // the old process stops accepting; the socket stays open in the child
	for _, got := range []string{firstLine(t, early), readLine(t, addr)} {
		if !strings.HasPrefix(got, "child ") || !strings.HasSuffix(got, SourceHandover) {
			t.Fatalf("got %q from %s, want the new process (pid %d) answering from a hand-over", got, addr, child.Pid)
		}
	}
	waitExit(t, child.Pid)
}

func TestSpawnFailsWhenChildExitsBeforeReady(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	socks := []Socket{{Name: Name("listen.tls", ln.Addr().String()), File: listenerFile(t, ln)}}
	_, err = Spawn(context.Background(), childConfig(t, "exit", ln.Addr().String(), socks))
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("Spawn = %v, want an error saying the new process exited (status 3) before it was ready", err)
	}
}

func TestSpawnKillsChildNotReadyInTime(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a done context is the timeout without waiting for one
	cfg := childConfig(t, "serve", "127.0.0.1:1", nil)
	cfg.Path, cfg.Args = "/bin/sleep", []string{"60"}
	if _, err := exec.LookPath(cfg.Path); err != nil {
		t.Skip("no /bin/sleep")
	}
	_, err := Spawn(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Spawn = %v, want the process killed for not being ready", err)
	}
}

// TestSystemdSocketIsMatchedByAddress passes a listener as systemd does
// (LISTEN_FDS=1 from descriptor 3) and checks that the configuration's
// address claims it.
func TestSystemdSocketIsMatchedByAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(childEnv(nil), envChild+"=systemd", "HANDOVER_TEST_ADDR="+addr,
		"LISTEN_FDS=1", "LISTEN_FDNAMES=tls")
	cmd.ExtraFiles = []*os.File{listenerFile(t, ln)}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles[0].Close()
	ln.Close()
	got := readLine(t, addr)
	readLine(t, addr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if !strings.HasSuffix(got, SourceSystemd) {
		t.Fatalf("got %q, want the socket inherited from systemd", got)
	}
}

func TestInheritWithoutEnvironmentHoldsNothing(t *testing.T) {
	in, err := Inherit()
	if err != nil {
		t.Fatal(err)
	}
	opened := false
	ln, inherited, err := in.Listen("listen.tls", "tcp", "127.0.0.1:0", func() (net.Listener, error) {
		opened = true
		return net.Listen("tcp", "127.0.0.1:0")
	})
	if err != nil || inherited || !opened {
		t.Fatalf("Listen: inherited %v, opened %v, err %v; want a fresh listener", inherited, opened, err)
	}
	ln.Close()
	if closed, err := in.Ready(); err != nil || len(closed) != 0 || in.HasParent() {
		t.Fatalf("Ready = %v, %v; HasParent %v", closed, err, in.HasParent())
	}
}

func TestNotifySendsToNotifySocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify")
	pc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	t.Setenv("NOTIFY_SOCKET", path)
	reloading, err := Reloading()
	if err != nil {
		t.Fatal(err)
	}
	if sent, err := Notify(reloading, Status("reloading")); !sent || err != nil {
		t.Fatalf("Notify = %v, %v", sent, err)
	}
	buf := make([]byte, 512)
	n, _, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	msg := string(buf[:n])
	if !strings.HasPrefix(msg, "RELOADING=1\nMONOTONIC_USEC=") || !strings.HasSuffix(msg, "STATUS=reloading\n") {
		t.Fatalf("datagram %q, want RELOADING=1, MONOTONIC_USEC= and STATUS= lines", msg)
	}
}

func TestNotifyWithoutNotifySocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if sent, err := Notify(NotifyReady); sent || err != nil {
		t.Fatalf("Notify = %v, %v; want nothing sent and no error", sent, err)
	}
}

// waitExit waits for the released child to exit (it answers two
// connections and exits).
func waitExit(t *testing.T, pid int) {
	t.Helper()
	p, err := os.FindProcess(pid)
	if err != nil {
		return
	}
	// Released, the child is not ours to Wait for through os.Process;
	// reap it with wait4 so that it leaves no zombie in the test binary.
	_, _ = p.Wait()
}

// TestExecutableFollowsTheStartPath: an upgrade starts what the path this
// process was started as names now (a symlink switched to a new release),
// not the file the process runs.
func TestExecutableFollowsTheStartPath(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "snigate")
	if err := os.Symlink("/bin/true", link); err != nil {
		t.Fatal(err)
	}
	old := os.Args[0]
	os.Args[0] = link
	defer func() { os.Args[0] = old }()
	got, err := Executable()
	if err != nil || got != link {
		t.Fatalf("Executable() = %q, %v; want the start path %q", got, err, link)
	}
	os.Args[0] = filepath.Join(dir, "gone")
	if got, err := Executable(); err != nil || got == "" || strings.HasPrefix(got, dir) {
		t.Fatalf("Executable() with a start path that names nothing = %q, %v; want this process's file", got, err)
	}
}
