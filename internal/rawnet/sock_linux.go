package rawnet

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Accept4 accepts a connection on the listening socket fd, non-blocking
// and close-on-exec, and returns it with its peer's address. Syscall, not
// RawSyscall: the listening socket's O_NONBLOCK is shared and may have
// been cleared (see the package doc).
func Accept4(fd int) (int, Sockaddr, error) {
	var sa Sockaddr
	sa.len = unix.SizeofSockaddrAny
	r, _, e := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(fd), uintptr(unsafe.Pointer(&sa.any)), uintptr(unsafe.Pointer(&sa.len)),
		unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, Sockaddr{}, e
	}
	return int(r), sa, nil
}

// SocketConnect opens a non-blocking, close-on-exec TCP socket with
// TCP_NODELAY (as net sets on every TCP connection) and starts connecting
// it to sa; the connect usually answers EINPROGRESS, which is no error
// here: the socket turns writable once connected (SocketError then tells
// how). On error the socket is closed (fd -1) and op names the call that
// failed.
func SocketConnect(sa *Sockaddr) (fd int, op string, err error) {
	r, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(sa.Family()), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		return -1, "socket", e
	}
	fd = int(r)
	SetNoDelay(fd)
	if err := Connect(fd, sa); err != nil && err != unix.EINPROGRESS && err != unix.EINTR {
		Close(fd)
		return -1, "connect", err
	}
	return fd, "", nil
}

// Connect is connect(2). Called again on a connecting socket it answers
// EALREADY while in progress, the connection's error if it failed, and
// once connected nil the first time and EISCONN after.
func Connect(fd int, sa *Sockaddr) error {
	if _, _, e := unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa.any)), uintptr(sa.len)); e != 0 {
		return e
	}
	return nil
}

// SetNoDelay sets TCP_NODELAY on a TCP socket (a listening one passes it
// on to the connections it accepts).
func SetNoDelay(fd int) error {
	one := int32(1)
	if _, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, uintptr(unsafe.Pointer(&one)), 4, 0); e != 0 {
		return e
	}
	return nil
}

// SocketError returns and clears the socket's pending error (getsockopt
// SO_ERROR): 0 once a connect succeeded. A failed getsockopt returns its
// own error.
func SocketError(fd int) (unix.Errno, error) {
	var v int32
	l := uint32(4)
	if _, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_ERROR, uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return 0, e
	}
	return unix.Errno(v), nil
}

// LocalAddr returns the socket's local address (getsockname(2)).
func LocalAddr(fd int) (Sockaddr, error) {
	var sa Sockaddr
	sa.len = unix.SizeofSockaddrAny
	if _, _, e := unix.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&sa.any)), uintptr(unsafe.Pointer(&sa.len))); e != 0 {
		return Sockaddr{}, e
	}
	return sa, nil
}
