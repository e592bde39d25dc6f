package rawnet

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Event is one epoll event: what is ready and the token it was registered
// with. It has epoll_event's layout on the architecture (packed on amd64,
// padded on s390x and ppc64), so a []Event is what epoll_wait fills.
type Event unix.EpollEvent

// Epoll event bits.
const (
	EPOLLIN        = unix.EPOLLIN
	EPOLLOUT       = unix.EPOLLOUT
	EPOLLRDHUP     = unix.EPOLLRDHUP
	EPOLLHUP       = unix.EPOLLHUP
	EPOLLERR       = unix.EPOLLERR
	EPOLLET        = unix.EPOLLET
	EPOLLONESHOT   = unix.EPOLLONESHOT
	EPOLLEXCLUSIVE = unix.EPOLLEXCLUSIVE
)

// Epoll_ctl operations.
const (
	EPOLL_CTL_ADD = unix.EPOLL_CTL_ADD
	EPOLL_CTL_MOD = unix.EPOLL_CTL_MOD
	EPOLL_CTL_DEL = unix.EPOLL_CTL_DEL
)

// NewEvent returns an event for EpollCtl: the events to watch and the
// token to report them with.
func NewEvent(events uint32, token uint64) Event {
	ev := Event{Events: events}
	ev.Fd, ev.Pad = int32(uint32(token)), int32(uint32(token>>32))
	return ev
}

// Token is the token the event's descriptor was registered with: the 64
// bits of epoll_event's data, kept as two 32-bit halves so that they
// round-trip whatever the byte order and alignment.
func (ev *Event) Token() uint64 { return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32 }

// Has reports whether any of bits is set in the event.
func (ev *Event) Has(bits uint32) bool { return ev.Events&bits != 0 }

// EpollCreate opens an epoll set, close-on-exec.
func EpollCreate() (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_EPOLL_CREATE1, unix.EPOLL_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// EpollCtl adds, changes (ev) or removes (ev nil) fd in the set epfd.
func EpollCtl(epfd, op, fd int, ev *Event) error {
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// EpollWaitNow is epoll_wait with a zero timeout: it never blocks. It
// fills events and returns how many it filled.
func EpollWaitNow(epfd int, events []Event) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(unsafe.SliceData(events))), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Eventfd opens a non-blocking, close-on-exec eventfd counter at zero.
func Eventfd() (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_EVENTFD2, 0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// Signal adds one to an eventfd's counter, which makes it readable.
func Signal(evfd int) error {
	var one [8]byte
	*(*uint64)(unsafe.Pointer(&one)) = 1 // host byte order, as eventfd reads it
	_, err := Write(evfd, one[:])
	return err
}

// Drain resets an eventfd's counter to zero and returns what it held.
func Drain(evfd int) (uint64, error) {
	var b [8]byte
	if _, err := Read(evfd, b[:]); err != nil {
		return 0, err
	}
	return *(*uint64)(unsafe.Pointer(&b)), nil
}
