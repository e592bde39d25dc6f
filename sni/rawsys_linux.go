package sni

import (
	"net"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The event loop's system calls, on non-blocking descriptors only:
// RawSyscall skips the runtime's entersyscall/exitsyscall bookkeeping,
// which a call that never blocks does not need, and keeps the loop's P:
// a loopback connect(2) or close(2) runs the peer's TCP processing too
// and can take tens of microseconds, and with Syscall the runtime's
// sysmon took the P away from such calls and handed it to another
// thread (measured with perf: a sixth of snigate's samples were in task
// switches). Errors are unix.Errno.
//
// The one exception is accept4 on a listening socket, whose open file
// description is shared: with the runtime's listener, and with the new
// process of a hand-over, so that anyone can clear its O_NONBLOCK, and
// accept4 then blocks until a connection arrives. The loop checks the
// flag before each batch of accepts (rawEnsureNonblock) and accept4 goes
// through Syscall, so that even a descriptor turned blocking between the
// check and the call never holds the loop's P: the runtime hands the P
// to another thread and every other goroutine runs on.

func rawSplice(in, out, n int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(in), 0, uintptr(out), 0, uintptr(n), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func rawRead(fd int, b []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func rawWrite(fd int, b []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func rawShutdownWrite(fd int) {
	unix.RawSyscall(unix.SYS_SHUTDOWN, uintptr(fd), unix.SHUT_WR, 0)
}

func rawClose(fd int) {
	unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

func rawEpollCtl(epfd, op, fd int, ev *unix.EpollEvent) error {
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// rawEpollWaitNow is epoll_wait with a zero timeout: it never blocks.
func rawEpollWaitNow(epfd int, events []unix.EpollEvent) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(unsafe.SliceData(events))), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// rawEnsureNonblock sets O_NONBLOCK on fd when it is clear, and reports
// whether it was; fcntl F_GETFL and F_SETFL never block.
func rawEnsureNonblock(fd int) (bool, error) {
	flags, _, e := unix.RawSyscall(unix.SYS_FCNTL, uintptr(fd), unix.F_GETFL, 0)
	if e != 0 {
		return false, e
	}
	if flags&unix.O_NONBLOCK != 0 {
		return false, nil
	}
	if _, _, e := unix.RawSyscall(unix.SYS_FCNTL, uintptr(fd), unix.F_SETFL, flags|unix.O_NONBLOCK); e != 0 {
		return true, e
	}
	return true, nil
}

// rawAccept4 accepts a connection, non-blocking and close-on-exec, and
// returns its peer's address. Syscall, not RawSyscall: see above.
func rawAccept4(fd int) (int, *net.TCPAddr, error) {
	var rsa unix.RawSockaddrAny
	l := uint32(unix.SizeofSockaddrAny)
	r, _, e := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&l)),
		unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, nil, e
	}
	return int(r), rawSockaddrTCP(&rsa), nil
}

func rawSockaddrTCP(rsa *unix.RawSockaddrAny) *net.TCPAddr {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		ip := make(net.IP, 4)
		copy(ip, sa.Addr[:])
		return &net.TCPAddr{IP: ip, Port: int(sa.Port>>8 | sa.Port<<8)}
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		ip := make(net.IP, 16)
		copy(ip, sa.Addr[:])
		a := &net.TCPAddr{IP: ip, Port: int(sa.Port>>8 | sa.Port<<8)}
		if sa.Scope_id != 0 {
			if ifi, err := net.InterfaceByIndex(int(sa.Scope_id)); err == nil {
				a.Zone = ifi.Name
			}
		}
		return a
	}
	return &net.TCPAddr{}
}

// rawSockaddr is a connect(2) address.
type rawSockaddr struct {
	any unix.RawSockaddrAny
	len uint32
}

func newRawSockaddr(ap netip.AddrPort) rawSockaddr {
	var rs rawSockaddr
	port := ap.Port()
	if ap.Addr().Is4() || ap.Addr().Is4In6() {
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&rs.any))
		sa.Family = unix.AF_INET
		sa.Port = port>>8 | port<<8
		sa.Addr = ap.Addr().Unmap().As4()
		rs.len = unix.SizeofSockaddrInet4
		return rs
	}
	sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(&rs.any))
	sa.Family = unix.AF_INET6
	sa.Port = port>>8 | port<<8
	sa.Addr = ap.Addr().As16()
	rs.len = unix.SizeofSockaddrInet6
	return rs
}

func (rs *rawSockaddr) family() int { return int(rs.any.Addr.Family) }

// rawSocketConnect opens a non-blocking TCP socket with TCP_NODELAY and
// starts connecting it; the connect usually answers EINPROGRESS, which is
// no error here. On error the socket is closed (fd -1) and op names the
// call that failed.
func rawSocketConnect(rs *rawSockaddr) (fd int, op string, err error) {
	r, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(rs.family()), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		return -1, "socket", e
	}
	fd = int(r)
	one := int32(1)
	unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, uintptr(unsafe.Pointer(&one)), 4, 0)
	if err := rawConnect(fd, rs); err != nil && err != unix.EINPROGRESS && err != unix.EINTR {
		rawClose(fd)
		return -1, "connect", err
	}
	return fd, "", nil
}

// rawConnect is connect(2); called again on a connecting socket it answers
// EISCONN once connected, EALREADY while in progress, or the error.
func rawConnect(fd int, rs *rawSockaddr) error {
	_, _, e := unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&rs.any)), uintptr(rs.len))
	if e != 0 {
		return e
	}
	return nil
}

// rawWritev writes up to two buffers in one writev(2).
func rawWritev(fd int, bufs [][]byte) (int, error) {
	var iov [2]unix.Iovec
	n := 0
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		if n == len(iov) {
			break
		}
		iov[n].Base = unsafe.SliceData(b)
		iov[n].SetLen(len(b))
		n++
	}
	if n == 0 {
		return 0, nil
	}
	r, _, e := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(n))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
