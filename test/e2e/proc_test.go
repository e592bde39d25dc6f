package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// spawner starts every child process from one OS thread that lives until
// the end of the run. Children get Pdeathsig (SIGKILL when the parent goes)
// so that a crashed test binary leaves no daemon behind; but the kernel
// sends it when the *thread* that forked exits, and netns.do ends threads.
// Forking from this thread only keeps children alive exactly as long as
// the run.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd  *exec.Cmd
	errc chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *spawner) loop() {
	runtime.LockOSThread() // never unlocked: the thread ends with the loop
	defer close(s.done)
	for r := range s.reqs {
		r.errc <- r.cmd.Start()
	}
}

// start starts cmd from the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	s.reqs <- spawnReq{cmd: cmd, errc: errc}
	return <-errc
}

// close ends the spawner's thread, and with it (Pdeathsig) any child
// still running.
func (s *spawner) close() {
	close(s.reqs)
	<-s.done
}

// stopGrace is how long a daemon gets to exit after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// proc is a long-running process of the world (a registry, containerd,
// snigate). Its output goes to a log file; it dies with the test process
// (Pdeathsig) and is stopped by pid in teardown.
type proc struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	err     error         // Wait's result, valid once done is closed
}

// startProc starts cmd with stdout and stderr appended to logPath.
func startProc(name, logPath string, cmd *exec.Cmd) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child has its own copy
	fmt.Fprintf(f, "=== e2e: %s: %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(cmd.Args, " "))
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = cleanEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := suite.spawner.start(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go p.wait()
	return p, nil
}

func (p *proc) wait() {
	p.err = p.cmd.Wait()
	close(p.done)
}

// running reports whether the process has not exited yet.
func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM, waits up to stopGrace, then kills. It returns the
// exit error of a process that did not exit cleanly on SIGTERM.
func (p *proc) stop() error {
	if !p.running() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.done:
		return p.err
	case <-t.C:
		p.kill()
		return fmt.Errorf("%s (pid %d) ignored SIGTERM for %s: killed", p.name, p.cmd.Process.Pid, stopGrace)
	}
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string {
	return tailFile(p.logPath, n)
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// cmdTimeout bounds every client command (a pull, ctl, check).
const cmdTimeout = 60 * time.Second

// result is what a finished client command printed.
type result struct {
	args string
	out  string // stdout and stderr, interleaved
	err  error
}

func (r result) String() string {
	return fmt.Sprintf("$ %s\n%s(exit: %v)", r.args, r.out, r.err)
}

// runCmd runs a client command to completion with a clean environment plus
// env, bounded by cmdTimeout.
func runCmd(cmd *exec.Cmd, env ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Dir = cmd.Dir
	c.Env = append(cleanEnv(), env...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err := suite.spawner.start(c)
	if err == nil {
		err = c.Wait()
	}
	if ctx.Err() != nil {
		err = errors.Join(err, fmt.Errorf("timed out after %s", cmdTimeout))
	}
	return result{args: strings.Join(cmd.Args, " "), out: out.String(), err: err}
}

// cleanEnv is the environment of every process of the world: no proxy
// variables (the node must work without them), a private HOME and
// containers config so that the host's settings do not leak in. No
// REGISTRY_* variable: docker-registry reads those as configuration.
func cleanEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "LANG=C"}
	if suite.world != nil && suite.world.home != "" {
		h := suite.world.home
		env = append(env, "HOME="+h, "XDG_RUNTIME_DIR="+h, "XDG_CONFIG_HOME="+h,
			"CONTAINERS_REGISTRIES_CONF="+h+"/registries.conf", "TMPDIR="+h)
	}
	return env
}
