package handover

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Environment of a process that inherits sockets. Inherit clears all of
// them, so that a process the gateway starts later does not see them.
const (
	// EnvFds names the sockets a hand-over passes, as a JSON array of
	// "KEY=ADDRESS" strings (the configuration key and the address as
	// written in the file), in the order of the file descriptors from 3.
	EnvFds = "SNIGATE_HANDOVER_FDS"
	// EnvReadyFd is the number of the descriptor Ready writes to: the
	// pipe the old process waits on.
	EnvReadyFd = "SNIGATE_HANDOVER_READY_FD"
)

// Sources of inherited sockets, as Inherited.Source reports them.
const (
	SourceNone     = ""
	SourceSystemd  = "systemd"
	SourceHandover = "handover"
)

// firstFd is the first inherited descriptor, after stdin, stdout, stderr.
const firstFd = 3

// socket is one inherited socket, not yet claimed.
type socket struct {
	name string // KEY=ADDRESS of a hand-over; systemd's FileDescriptorName
	ln   net.Listener
	pc   net.PacketConn
}

func (s *socket) addr() net.Addr {
	if s.ln != nil {
		return s.ln.Addr()
	}
	return s.pc.LocalAddr()
}

func (s *socket) close() error {
	if s.ln != nil {
		if u, ok := s.ln.(*net.UnixListener); ok {
			u.SetUnlinkOnClose(false) // the path may be served by someone else now
		}
		return s.ln.Close()
	}
	return s.pc.Close()
}

// Inherited holds the sockets this process was given at start. The zero
// value (and a nil *Inherited) holds none: Listen and ListenPacket open
// every socket. It is safe for concurrent use.
type Inherited struct {
	mu      sync.Mutex
	sockets []*socket
	ready   *os.File // the hand-over's pipe; nil when not started by Spawn
	source  string
}

// Upgrading reports whether this process was started by a hand-over
// (Spawn): its predecessor still runs, draining, and holds what it has not
// handed over (a cache directory's lock). Read it before Inherit, which
// clears the environment it looks at.
func Upgrading() bool { return os.Getenv(EnvFds) != "" }

// Inherit takes the sockets passed by systemd (LISTEN_PID must be this
// process) or by a hand-over, and clears their environment variables. A
// descriptor that is not a socket is an error.
func Inherit() (*Inherited, error) {
	defer clearEnv()
	if names := os.Getenv(EnvFds); names != "" {
		return inheritHandover(names, os.Getenv(EnvReadyFd))
	}
	if os.Getenv("LISTEN_PID") != "" {
		return inheritSystemd(os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES"))
	}
	return &Inherited{}, nil
}

func clearEnv() {
	for _, k := range []string{EnvFds, EnvReadyFd, "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
		os.Unsetenv(k)
	}
}

func inheritSystemd(pid, fds, fdNames string) (*Inherited, error) {
	if pid != strconv.Itoa(os.Getpid()) {
		return &Inherited{}, nil // meant for another process (sd_listen_fds does the same)
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("socket activation: LISTEN_FDS=%q: want the number of sockets passed", fds)
	}
	names := strings.Split(fdNames, ":")
	in := &Inherited{source: SourceSystemd}
	for i := range n {
		name := fmt.Sprintf("fd %d", firstFd+i)
		if i < len(names) && names[i] != "" {
			name = names[i]
		}
		if err := in.take(firstFd+i, name); err != nil {
			in.closeAll()
			return nil, fmt.Errorf("socket activation: %w", err)
		}
	}
	return in, nil
}

func inheritHandover(namesJSON, readyFd string) (*Inherited, error) {
	var names []string
	if err := json.Unmarshal([]byte(namesJSON), &names); err != nil {
		return nil, fmt.Errorf("hand-over: %s=%q: %w", EnvFds, namesJSON, err)
	}
	in := &Inherited{source: SourceHandover}
	for i, name := range names {
		if err := in.take(firstFd+i, name); err != nil {
			in.closeAll()
			return nil, fmt.Errorf("hand-over: %w", err)
		}
	}
	if readyFd != "" {
		fd, err := strconv.Atoi(readyFd)
		if err != nil || fd < firstFd {
			in.closeAll()
			return nil, fmt.Errorf("hand-over: %s=%q: want a descriptor number", EnvReadyFd, readyFd)
		}
		unix.CloseOnExec(fd)
		in.ready = os.NewFile(uintptr(fd), "hand-over ready pipe")
	}
	return in, nil
}

// take turns descriptor fd into a listener or a packet socket.
func (in *Inherited) take(fd int, name string) error {
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return fmt.Errorf("descriptor %d (%s) is not a socket: %w", fd, name, err)
	}
	unix.CloseOnExec(fd)
	// Non-blocking before os.NewFile sees it, so that net.File*'s Fd()
	// leaves the mode alone: the socket is shared with the old process,
	// whose event loops accept on it while this one starts (nonblock.go).
	if _, err := setNonblock(fd); err != nil {
		unix.Close(fd)
		return fmt.Errorf("descriptor %d (%s): %w", fd, name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close() // net.File* keep a duplicate
	s := &socket{name: name}
	switch typ {
	case unix.SOCK_STREAM:
		s.ln, err = net.FileListener(f)
	case unix.SOCK_DGRAM:
		s.pc, err = net.FilePacketConn(f)
	default:
		err = fmt.Errorf("socket type %d: want a stream (ListenStream=) or datagram (ListenDatagram=) socket", typ)
	}
	if err != nil {
		return fmt.Errorf("descriptor %d (%s): %w", fd, name, err)
	}
	in.sockets = append(in.sockets, s)
	return nil
}

// Source says where the sockets came from: SourceSystemd, SourceHandover,
// or SourceNone.
func (in *Inherited) Source() string {
	if in == nil {
		return SourceNone
	}
	return in.source
}

// HasParent reports whether this process was started by Spawn: Ready then
// tells the old process to give way.
func (in *Inherited) HasParent() bool { return in != nil && in.ready != nil }

// Listen returns the inherited stream socket for key (a configuration key
// such as "listen.tls") and addr (as written in the configuration; for
// network "unix", the socket's path), or opens one with open. It reports
// whether the socket was inherited. A socket matches when a hand-over
// named it KEY=ADDRESS, or when it is bound to addr (an address without a
// host, or with an unspecified one, matches a socket bound to any
// address on that port).
func (in *Inherited) Listen(key, network, addr string, open func() (net.Listener, error)) (net.Listener, bool, error) {
	if s := in.claim(key, network, addr, true); s != nil {
		return s.ln, true, nil
	}
	ln, err := open()
	return ln, false, err
}

// ListenPacket is Listen for a datagram socket ("udp").
func (in *Inherited) ListenPacket(key, network, addr string, open func() (net.PacketConn, error)) (net.PacketConn, bool, error) {
	if s := in.claim(key, network, addr, false); s != nil {
		return s.pc, true, nil
	}
	pc, err := open()
	return pc, false, err
}

// claim removes and returns the first socket that matches, by name first,
// then by address.
func (in *Inherited) claim(key, network, addr string, stream bool) *socket {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	name := Name(key, addr)
	match := func(s *socket) bool {
		return (s.ln != nil) == stream && s.addr().Network() == network
	}
	for _, byName := range []bool{true, false} {
		for i, s := range in.sockets {
			if !match(s) || (byName && s.name != name) || (!byName && !sameAddr(s.addr(), network, addr)) {
				continue
			}
			in.sockets = append(in.sockets[:i], in.sockets[i+1:]...)
			return s
		}
	}
	return nil
}

// Name is the name a hand-over gives a socket opened for key and addr.
func Name(key, addr string) string { return key + "=" + addr }

// Ready closes the inherited sockets that nothing claimed (the new
// configuration no longer has them) and, in a process started by Spawn,
// tells the old process that this one serves. It returns the names of the
// sockets it closed.
func (in *Inherited) Ready() ([]string, error) {
	if in == nil {
		return nil, nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	var closed []string
	for _, s := range in.sockets {
		closed = append(closed, fmt.Sprintf("%s (%s %s)", s.name, s.addr().Network(), s.addr()))
	}
	err := in.closeAllLocked()
	if in.ready != nil {
		_, werr := in.ready.Write([]byte{1})
		err = errors.Join(err, werr, in.ready.Close())
		in.ready = nil
	}
	return closed, err
}

// Close closes the sockets nothing claimed and the hand-over's pipe
// without telling the old process anything: it sees this process fail.
// For a start that fails; Ready is the way to succeed.
func (in *Inherited) Close() {
	if in != nil {
		in.closeAll()
	}
}

func (in *Inherited) closeAll() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.closeAllLocked()
	if in.ready != nil {
		in.ready.Close()
		in.ready = nil
	}
}

func (in *Inherited) closeAllLocked() error {
	var errs []error
	for _, s := range in.sockets {
		errs = append(errs, s.close())
	}
	in.sockets = nil
	return errors.Join(errs...)
}
