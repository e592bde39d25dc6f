package handover

import (
	"context"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// wantNonblocking fails t unless ln's socket has O_NONBLOCK set.
func wantNonblocking(t *testing.T, ln net.Listener, when string) {
	t.Helper()
	nb, err := Nonblocking(ln.(syscall.Conn))
	if err != nil {
		t.Fatal(err)
	}
	if !nb {
		t.Fatalf("%s: the listening socket is in blocking mode (O_NONBLOCK cleared on the open file description it shares with the hand-over's copy)", when)
	}
}

// Regression: a failed hand-over left the old process's listeners in
// blocking mode: os.StartProcess calls Fd() on every extra file, and the
// file of a net listener's File() then clears O_NONBLOCK on the open file
// description it shares with the listener. The event loops' accept4 then
// blocked. Spawn leaves every socket non-blocking, whichever file it was
// given and whatever became of the new process.
func TestSpawnLeavesSocketsNonblocking(t *testing.T) {
	tests := []struct {
		name string
		file func(t *testing.T, ln net.Listener) *os.File
		mode string // the child's: "exit" fails, "serve" succeeds
	}{
		{name: "a listener's File(), the new process exits", file: listenerFile, mode: "exit"},
		{name: "DupSocket, the new process exits", file: dupFile, mode: "exit"},
		{name: "a listener's File(), the new process serves", file: listenerFile, mode: "serve"},
		{name: "DupSocket, the new process serves", file: dupFile, mode: "serve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			addr := ln.Addr().String()
			wantNonblocking(t, ln, "before the hand-over")
			socks := []Socket{{Name: Name("listen.tls", addr), File: tt.file(t, ln)}}
			child, err := Spawn(context.Background(), childConfig(t, tt.mode, addr, socks))
			switch {
			case tt.mode == "exit" && (err == nil || !strings.Contains(err.Error(), "exited before it was ready")):
				t.Fatalf("Spawn = %v, want the new process's exit", err)
			case tt.mode == "serve" && err != nil:
				t.Fatalf("Spawn: %v", err)
			}
			wantNonblocking(t, ln, "after Spawn returned")
			if child != nil {
				ln.Close()
				readLine(t, addr)
				readLine(t, addr)
				waitExit(t, child.Pid)
			}
		})
	}
}

func dupFile(t *testing.T, ln net.Listener) *os.File {
	t.Helper()
	f, err := DupSocket(ln.(syscall.Conn))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDupSocketFdLeavesSocketNonblocking: the file DupSocket returns can
// be given to anything that calls its Fd() (os.StartProcess does) without
// putting the shared socket into blocking mode.
func TestDupSocketFdLeavesSocketNonblocking(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f := dupFile(t, ln)
	defer f.Close()
	if f.Fd() == ^uintptr(0) {
		t.Fatal("no descriptor")
	}
	wantNonblocking(t, ln, "after Fd() on the duplicate")
}

// TestEnsureNonblockingRestoresFlag: a socket whose O_NONBLOCK someone
// cleared is made non-blocking again, and EnsureNonblocking says so once.
func TestEnsureNonblockingRestoresFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f := listenerFile(t, ln)
	f.Fd() // clears O_NONBLOCK on the shared open file description
	f.Close()
	if nb, _ := Nonblocking(ln.(syscall.Conn)); nb {
		t.Fatal("setup: Fd() on a listener's File() left the socket non-blocking; the premise of this test is gone")
	}
	for i, want := range []bool{true, false} {
		restored, err := EnsureNonblocking(ln.(syscall.Conn))
		if err != nil || restored != want {
			t.Fatalf("EnsureNonblocking #%d = %v, %v; want %v", i+1, restored, err, want)
		}
	}
	wantNonblocking(t, ln, "after EnsureNonblocking")
}
