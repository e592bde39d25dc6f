package handover

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// A socket handed over shares its open file description with the
// listener it was duplicated from, and so its file status flags: whoever
// clears O_NONBLOCK on one clears it on every descriptor of the socket, in
// this process and in the new one. The listeners must stay non-blocking
// (snigate's event loops accept on them without the runtime poller), so
// nothing on the hand-over path may put a socket into blocking mode. The
// one thing that does is (*os.File).Fd() on a file whose descriptor the
// os package made non-blocking itself: the file of a net listener's
// File() method, or of os.NewFile on a blocking descriptor. os.StartProcess
// calls Fd() on every extra file. The functions here never do.

// DupSocket duplicates c's descriptor (close-on-exec) for Spawn. The file
// it returns leaves the socket non-blocking when anything calls its Fd(),
// os.StartProcess included, unlike the file of a net listener's File().
func DupSocket(c syscall.Conn) (*os.File, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("duplicate socket: %w", err)
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, fmt.Errorf("duplicate socket: %w", err)
	}
	if derr != nil {
		return nil, fmt.Errorf("duplicate socket: %w", os.NewSyscallError("fcntl", derr))
	}
	// Non-blocking before os.NewFile sees it: the file then records that
	// it did not set the mode itself, and its Fd() leaves the mode alone.
	if _, err := setNonblock(fd); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("duplicate socket: %w", err)
	}
	return os.NewFile(uintptr(fd), "hand-over socket"), nil
}

// EnsureNonblocking makes c's socket non-blocking again if anything
// cleared O_NONBLOCK on it, and reports whether it had to.
func EnsureNonblocking(c syscall.Conn) (restored bool, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return false, fmt.Errorf("socket flags: %w", err)
	}
	var serr error
	if err := rc.Control(func(s uintptr) { restored, serr = setNonblock(int(s)) }); err != nil {
		return false, fmt.Errorf("socket flags: %w", err)
	}
	if serr != nil {
		return false, fmt.Errorf("socket flags: %w", serr)
	}
	return restored, nil
}

// Nonblocking reports whether c's socket has O_NONBLOCK set.
func Nonblocking(c syscall.Conn) (bool, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return false, fmt.Errorf("socket flags: %w", err)
	}
	var flags int
	var ferr error
	if err := rc.Control(func(s uintptr) { flags, ferr = unix.FcntlInt(s, unix.F_GETFL, 0) }); err != nil {
		return false, fmt.Errorf("socket flags: %w", err)
	}
	if ferr != nil {
		return false, fmt.Errorf("socket flags: %w", os.NewSyscallError("fcntl", ferr))
	}
	return flags&unix.O_NONBLOCK != 0, nil
}

// setNonblock sets O_NONBLOCK on fd when it is clear; true: it was.
func setNonblock(fd int) (bool, error) {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return false, os.NewSyscallError("fcntl", err)
	}
	if flags&unix.O_NONBLOCK != 0 {
		return false, nil
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags|unix.O_NONBLOCK); err != nil {
		return false, os.NewSyscallError("fcntl", err)
	}
	return true, nil
}

// restoreNonblocking makes every handed-over socket non-blocking again,
// once the new process is ready or gone: a file from a net listener's
// File() (Fd() in os.StartProcess cleared the flag), or a new process
// that cleared it and died before it set it again. A socket it cannot
// read the flags of is left as it is: the caller's own check of its
// listeners (EnsureNonblocking) reports it.
func restoreNonblocking(socks []Socket) {
	for _, s := range socks {
		EnsureNonblocking(s.File)
	}
}
