package sni

import (
	"errors"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// defaultParkAfter is how long a spliced direction waits for bytes in its
// own goroutine before it parks: its goroutine returns and the server's
// parker watches its socket instead, so that an idle tunnel holds no
// goroutine and no stack. Short, so that few tunnels hold a stack at once
// while many open (bench idle-mem, 9,000 tunnels: 8.6 KiB RSS per tunnel
// with 1s, 4.7 KiB with 200ms); a park and wake-up cycle costs an
// epoll_ctl and a goroutine start, nothing a request-response pause of
// 200ms would notice.
const defaultParkAfter = 200 * time.Millisecond

// errParked ends a direction's goroutine while the parker holds it.
var errParked = errors.New("parked")

// minSweep is the shortest interval between two idle sweeps of the parked
// directions.
const minSweep = 50 * time.Millisecond

// parker watches the sockets of parked spliced directions in one epoll
// set (EPOLLONESHOT, so a woken socket stays quiet until parked again) and
// restarts a direction's goroutine when its socket becomes readable, when
// its tunnel reaches the idle timeout, or when the tunnel is closed. One
// goroutine per server runs it, started with the first park.
type parker struct {
	mu      sync.Mutex
	epfd    int // -1 until started
	evfd    int // eventfd that stops the loop
	parked  map[uint64]*spliceDir
	token   uint64    // last token handed out; 0 is the eventfd's
	sweepAt time.Time // next idle sweep; zero: none due
	stopped bool
	done    chan struct{}
	notify  chan<- int // tests: the parked count after each change
}

func newParker() *parker {
	return &parker{epfd: -1, evfd: -1, parked: make(map[uint64]*spliceDir)}
}

// park hands d to the parker. It returns false if d must keep running in
// the calling goroutine (its socket is closed, or the parker cannot
// start); true means the calling goroutine must return without touching d
// again.
func (p *parker) park(d *spliceDir) bool {
	p.mu.Lock()
	if err := p.startLocked(); err != nil {
		p.mu.Unlock()
		return false
	}
	p.token++
	tok := p.token
	d.token = tok
	p.parked[tok] = d
	p.notifyLocked()
	if dl := d.idleDeadline(); !dl.IsZero() && (p.sweepAt.IsZero() || dl.Before(p.sweepAt)) {
		p.sweepAt = dl
		p.kickLocked()
	}
	epfd := p.epfd
	p.mu.Unlock()

	// Once the socket is in the set, an event may restart d at once in
	// another goroutine: nothing of d may be touched after a successful
	// epoll_ctl.
	wasRegistered := d.registered
	op := unix.EPOLL_CTL_ADD
	if wasRegistered {
		op = unix.EPOLL_CTL_MOD
	}
	d.registered = true
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: int32(tok), Pad: int32(tok >> 32)}
	var ctlErr error
	err := d.srcRC.Control(func(fd uintptr) { ctlErr = unix.EpollCtl(epfd, op, int(fd), &ev) })
	if err == nil && ctlErr == nil {
		return true
	}
	// Not parked: take d back, unless a wake-up already restarted it.
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.parked[tok]; ok {
		delete(p.parked, tok)
		d.token = 0
		d.registered = wasRegistered
		p.notifyLocked()
		return false
	}
	return true
}

// wake restarts d if it is parked; the first of wake, an event or a sweep
// wins.
func (p *parker) wake(d *spliceDir) {
	p.mu.Lock()
	ok := p.takeLocked(d.token, d)
	p.mu.Unlock()
	if ok {
		d.st.resume(d)
	}
}

func (p *parker) takeLocked(tok uint64, d *spliceDir) bool {
	if tok == 0 || p.parked[tok] != d {
		return false
	}
	delete(p.parked, tok)
	d.token = 0
	p.notifyLocked()
	return true
}

func (p *parker) notifyLocked() {
	if p.notify != nil {
		p.notify <- len(p.parked)
	}
}

// startLocked opens the epoll set and starts the loop on first use.
func (p *parker) startLocked() error {
	if p.stopped {
		return errors.New("parker stopped")
	}
	if p.epfd >= 0 {
		return nil
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	evfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(evfd)
		return err
	}
	p.epfd, p.evfd, p.done = epfd, evfd, make(chan struct{})
	go p.loop(epfd, evfd)
	return nil
}

// kickLocked interrupts the loop's wait so that it sees a new sweep time
// or the stop.
func (p *parker) kickLocked() {
	if p.evfd >= 0 {
		one := [8]byte{1}
		unix.Write(p.evfd, one[:])
	}
}

// loop waits for events and sweeps for idle tunnels until stop.
func (p *parker) loop(epfd, evfd int) {
	defer close(p.done)
	events := make([]unix.EpollEvent, 128)
	var woken []*spliceDir
	for {
		n, err := unix.EpollWait(epfd, events, p.waitMillis())
		if err != nil && err != unix.EINTR {
			return // EBADF after stop, or a bug: parked tunnels are woken by stop
		}
		woken = woken[:0]
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return
		}
		for _, ev := range events[:max(n, 0)] {
			tok := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if tok == 0 {
				var b [8]byte
				unix.Read(evfd, b[:])
				continue
			}
			if d := p.parked[tok]; d != nil && p.takeLocked(tok, d) {
				woken = append(woken, d)
			}
		}
		woken = p.sweepLocked(woken)
		p.mu.Unlock()
		for _, d := range woken {
			d.st.resume(d)
		}
	}
}

// waitMillis is the EpollWait timeout: until the next sweep.
func (p *parker) waitMillis() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sweepAt.IsZero() {
		return -1
	}
	return int(max(time.Until(p.sweepAt), 0)/time.Millisecond) + 1
}

// sweepLocked wakes the parked directions whose tunnel reached the idle
// timeout (they end it) and sets the next sweep time.
func (p *parker) sweepLocked(woken []*spliceDir) []*spliceDir {
	now := time.Now()
	if p.sweepAt.IsZero() || now.Before(p.sweepAt) {
		return woken
	}
	var next time.Time
	for tok, d := range p.parked {
		dl := d.idleDeadline()
		switch {
		case dl.IsZero():
		case !now.Before(dl):
			p.takeLocked(tok, d)
			woken = append(woken, d)
		case next.IsZero() || dl.Before(next):
			next = dl
		}
	}
	if !next.IsZero() {
		next = maxTime(next, now.Add(minSweep))
	}
	p.sweepAt = next
	return woken
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// stop ends the loop and closes the epoll set; call it once no tunnel
// runs or is parked.
func (p *parker) stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	p.kickLocked()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return
	}
	<-done
	p.mu.Lock()
	defer p.mu.Unlock()
	unix.Close(p.epfd)
	unix.Close(p.evfd)
	p.epfd, p.evfd = -1, -1
}
