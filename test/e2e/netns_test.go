package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// nsPrefix starts the name of every network namespace this suite makes:
// "sgE2E-<pid>-<role>". The pid lets a later run tell a crashed run's
// leftovers (pid gone) from a run still going on in parallel.
const nsPrefix = "sgE2E-"

// netns is a named network namespace (`ip netns add`).
type netns struct {
	name string
}

func newNetns(role string) (*netns, error) {
	n := &netns{name: fmt.Sprintf("%s%d-%s", nsPrefix, os.Getpid(), role)}
	if err := run("ip", "netns", "add", n.name); err != nil {
		return nil, err
	}
	if err := n.ip("link", "set", "lo", "up"); err != nil {
		return n, err
	}
	return n, nil
}

// ip runs `ip -n NAME args...`.
func (n *netns) ip(args ...string) error {
	return run("ip", append([]string{"-n", n.name}, args...)...)
}

// command returns argv run inside the namespace (`ip netns exec`), which
// also bind-mounts /etc/netns/NAME/* (resolv.conf) over /etc.
func (n *netns) command(argv ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.name}, argv...)...)
}

// etcDir is where `ip netns exec` finds the namespace's own /etc files.
func (n *netns) etcDir() string { return filepath.Join("/etc/netns", n.name) }

// writeEtc writes /etc/netns/NAME/file, seen as /etc/file inside.
func (n *netns) writeEtc(file, content string) error {
	if err := os.MkdirAll(n.etcDir(), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(n.etcDir(), file), []byte(content), 0o644)
}

// addAddr puts cidr on dev and brings dev up.
func (n *netns) addAddr(dev string, cidrs ...string) error {
	for _, c := range cidrs {
		if err := n.ip("addr", "add", c, "dev", dev); err != nil {
			return err
		}
	}
	return n.ip("link", "set", dev, "up")
}

// do runs fn on an OS thread that has entered the namespace, so that the
// sockets fn opens live there (dial IP addresses: the Go resolver would read
// the host's resolv.conf). The thread is never returned to the scheduler:
// it ends with the goroutine.
func (n *netns) do(fn func() error) error {
	errc := make(chan error, 1)
	go n.doLocked(fn, errc)
	return <-errc
}

func (n *netns) doLocked(fn func() error, errc chan<- error) {
	runtime.LockOSThread() // no Unlock: the thread must not be reused
	f, err := os.Open(filepath.Join("/var/run/netns", n.name))
	if err != nil {
		errc <- err
		return
	}
	defer f.Close()
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		errc <- fmt.Errorf("setns %s: %w", n.name, err)
		return
	}
	errc <- fn()
}

// pids lists the processes living in the namespace.
func (n *netns) pids() []int {
	out, _ := exec.Command("ip", "netns", "pids", n.name).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// remove kills what still runs inside (only this suite's processes can be
// there), deletes the namespace and its /etc/netns directory. The test
// binary itself may be listed: netns.do may have run on its main thread,
// which Go parks instead of ending.
func (n *netns) remove() error {
	for _, pid := range n.pids() {
		if pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	err := run("ip", "netns", "del", n.name)
	return errors.Join(err, os.RemoveAll(n.etcDir()))
}

// vethPair links two namespaces with a veth pair, created directly inside
// them (so no name is ever taken in the root namespace), and addresses it.
func vethPair(a *netns, aDev string, aAddrs []string, b *netns, bDev string, bAddrs []string) error {
	if err := run("ip", "link", "add", aDev, "netns", a.name, "type", "veth",
		"peer", "name", bDev, "netns", b.name); err != nil {
		return err
	}
	return errors.Join(a.addAddr(aDev, aAddrs...), b.addAddr(bDev, bAddrs...))
}

// removeLeftovers deletes the namespaces of an earlier run of this suite
// whose test process is gone (it crashed or was killed before teardown).
func removeLeftovers(log io.Writer) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if !strings.HasPrefix(name, nsPrefix) || ownerAlive(name) {
			continue
		}
		fmt.Fprintf(log, "e2e: removing namespace %s left by a crashed run\n", name)
		if err := (&netns{name: name}).remove(); err != nil {
			fmt.Fprintf(log, "e2e: %v\n", err)
		}
	}
}

// ownerAlive reports whether the test process that made namespace name
// (sgE2E-<pid>-<role>) still runs: that pid is a test binary like this one.
func ownerAlive(name string) bool {
	pidText, _, _ := strings.Cut(strings.TrimPrefix(name, nsPrefix), "-")
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		return false
	}
	if pid == os.Getpid() {
		return true
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	self := filepath.Base(os.Args[0])
	self = self[:min(len(self), 15)] // the kernel keeps 15 bytes of comm
	return err == nil && strings.TrimSpace(string(comm)) == self
}

// run runs a short command and reports its output on failure.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
