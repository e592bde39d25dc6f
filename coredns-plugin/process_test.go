package snigate

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/snigate/snigate/internal/testkit"
	"os"
	"os/exec"
	"strings"
	"time"
)

// errAddrInUse: the chosen port was taken before CoreDNS could bind it.
var errAddrInUse = errors.New("address already in use")

// process is a started CoreDNS with its output collected.
type process struct {
	addr string // where it serves DNS, set by the caller
	cmd  *exec.Cmd
	done chan struct{} // closed when its output has ended

	out testkit.LogSink
}

// startProcess runs bin and waits until CoreDNS prints its version banner,
// which it does once every server is listening, or until it exits.
func startProcess(bin string, args ...string) (*process, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p := &process{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	err = p.cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	ready := make(chan struct{})
	go p.collect(r, ready)
	timeout := time.NewTimer(2 * time.Minute)
	defer timeout.Stop()
	select {
	case <-ready:
		return p, nil
	case <-p.done:
	case <-timeout.C:
	}
	p.stop()
	if strings.Contains(p.output(), "address already in use") {
		return nil, errAddrInUse
	}
	return nil, fmt.Errorf("coredns did not start:\n%s", p.output())
}

// collect keeps the output and closes ready at the banner line.
func (p *process) collect(r *os.File, ready chan<- struct{}) {
	defer close(p.done)
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		p.out.Write([]byte(line + "\n"))
		if strings.HasPrefix(line, "CoreDNS-") {
			close(ready)
		}
	}
}

func (p *process) output() string { return p.out.String() }

// stop kills the process and waits for it and for its output to end.
func (p *process) stop() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
	<-p.done
}
