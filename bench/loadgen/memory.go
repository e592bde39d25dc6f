package main

import (
	"net"
	"sync"
	"time"
)

// Idle-memory parameters.
const (
	idleOpeners  = 64              // concurrent connection openers
	idleWarmup   = 200             // connections opened and closed before the baseline
	idleSettle   = 2 * time.Second // wait after the warm-up before the baseline (lazy frees, late accepts)
	idleReleased = 15 * time.Second
)

// idleOpened is the outcome of openIdle.
type idleOpened struct {
	conns  []net.Conn // open and verified
	failed int
	first  error     // the first failure
	last   time.Time // when the last tunnel was verified
}

// openIdle opens n spliced tunnels to addr, each verified end to end (the
// upstream's one-byte answer came back), and leaves them idle.
func openIdle(addr string, m messages, n int) idleOpened {
	var (
		mu  sync.Mutex
		out = idleOpened{conns: make([]net.Conn, 0, n)}
		wg  sync.WaitGroup
	)
	jobs := make(chan struct{}, n)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	for range idleOpeners {
		wg.Go(func() {
			for range jobs {
				c, err := openOneIdle(addr, m)
				mu.Lock()
				if err != nil {
					out.failed++
					out.first = cmpOr(out.first, err)
				} else {
					out.conns = append(out.conns, c)
					out.last = time.Now()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func openOneIdle(addr string, m messages) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, opTimeout)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(2 * opTimeout))
	var b [1]byte
	if _, err := c.Write(m.idle); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.Read(b[:]); err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// memSample is the proxy's footprint at one moment.
type memSample struct {
	rssKiB int64
	fds    fdCount
}

// sampleMem reads the footprint of the proxy's processes (tree: its
// processTree, taken once so that a reading is quick).
func sampleMem(tree []int) memSample {
	return memSample{rssKiB: rssKiB(tree), fds: countFDs(tree)}
}

// waitReleased waits until the proxy's descriptors are back near base.
func waitReleased(tree []int, base fdCount) {
	deadline := time.Now().Add(idleReleased)
	for time.Now().Before(deadline) {
		if countFDs(tree).Total <= base.Total+16 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}
