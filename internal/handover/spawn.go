package handover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultSpawnTimeout is how long Spawn waits for the new process to be
// ready before it kills it.
const DefaultSpawnTimeout = time.Minute

// Socket is one socket handed over: its name (Name(key, addr)) and a
// duplicate of its descriptor, which Spawn closes.
type Socket struct {
	Name string
	File *os.File
}

// SpawnConfig says what Spawn starts. Each field's zero value is usable.
type SpawnConfig struct {
	// Sockets are passed as descriptors 3, 4, ... in order.
	Sockets []Socket
	// Path is the program to start. "": the program this process was
	// started as, as its path names it now (see Executable).
	Path string
	// Args are its arguments after the program name. nil: this process's.
	Args []string
	// Env is its environment, without the variables of EnvFds and
	// EnvReadyFd (set by Spawn). nil: this process's.
	Env []string
	// Stdout and Stderr are the new process's; they must be files so that
	// nothing in this process copies its output. nil: this process's.
	Stdout, Stderr *os.File
	// Timeout bounds the wait for Ready. 0: DefaultSpawnTimeout.
	Timeout time.Duration
}

// Child is a process started by Spawn that has called Ready.
type Child struct {
	Pid  int
	Path string
}

// Spawn starts a new process with the sockets and waits until it calls
// Ready. If it exits first, or ctx is done, or the timeout passes, the
// process is killed and an error says which. The sockets' files are
// closed either way, and the sockets are non-blocking again when it
// returns, whatever the new process did to them (see nonblock.go); the
// caller keeps serving on its own listeners until Spawn returns nil, then
// stops accepting and drains.
func Spawn(ctx context.Context, cfg SpawnConfig) (*Child, error) {
	defer closeSockets(cfg.Sockets)
	defer restoreNonblocking(cfg.Sockets) // before the close: runs first
	cmd, readyR, err := command(cfg)
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	if err := cmd.Start(); err != nil {
		cmd.ExtraFiles[len(cmd.ExtraFiles)-1].Close()
		return nil, fmt.Errorf("hand-over: start %s: %w", cmd.Path, err)
	}
	cmd.ExtraFiles[len(cmd.ExtraFiles)-1].Close() // the child's end only
	if err := waitReady(ctx, cmd, readyR, cfg.Timeout); err != nil {
		return nil, err
	}
	child := &Child{Pid: cmd.Process.Pid, Path: cmd.Path}
	// The new process outlives this one; nothing waits for it here.
	cmd.Process.Release()
	return child, nil
}

// command builds the new process: the sockets, then the write end of the
// ready pipe, as extra files. It returns the read end.
func command(cfg SpawnConfig) (*exec.Cmd, *os.File, error) {
	path := cfg.Path
	if path == "" {
		exe, err := Executable()
		if err != nil {
			return nil, nil, fmt.Errorf("hand-over: find this program's path: %w", err)
		}
		path = exe
	}
	args := cfg.Args
	if args == nil {
		args = os.Args[1:]
	}
	names := make([]string, len(cfg.Sockets))
	files := make([]*os.File, 0, len(cfg.Sockets)+1)
	for i, s := range cfg.Sockets {
		names[i] = s.Name
		files = append(files, s.File)
	}
	namesJSON, _ := json.Marshal(names) // strings always encode
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("hand-over: ready pipe: %w", err)
	}
	cmd := exec.Command(path, args...)
	cmd.ExtraFiles = append(files, w)
	cmd.Env = append(childEnv(cfg.Env), EnvFds+"="+string(namesJSON),
		EnvReadyFd+"="+strconv.Itoa(firstFd+len(cfg.Sockets)))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, orFile(cfg.Stdout, os.Stdout), orFile(cfg.Stderr, os.Stderr)
	return cmd, r, nil
}

// childEnv is env (nil: this process's) without the variables of a
// hand-over or of socket activation.
func childEnv(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case EnvFds, EnvReadyFd, "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES":
			continue
		}
		out = append(out, kv)
	}
	return out
}

func orFile(f, def *os.File) *os.File {
	if f != nil {
		return f
	}
	return def
}

// waitReady waits for the byte Ready writes. On any other outcome it
// kills the process and reaps it.
func waitReady(ctx context.Context, cmd *exec.Cmd, readyR *os.File, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultSpawnTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	readc := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { readc <- readReady(readyR) })
	defer wg.Wait()
	select {
	case err := <-readc:
		if err == nil {
			return nil
		}
		werr := cmd.Wait() // it closed the pipe without a byte: it exited
		return fmt.Errorf("hand-over: new process %d (%s) exited before it was ready (%v); the old process keeps serving, see the new one's log lines above", cmd.Process.Pid, cmd.Path, exitReason(werr))
	case <-ctx.Done():
		cmd.Process.Kill()
		cmd.Wait() // its end of the pipe closes: readReady returns
		readyR.Close()
		return fmt.Errorf("hand-over: new process %d (%s) not ready within %s: killed; the old process keeps serving", cmd.Process.Pid, cmd.Path, timeout)
	}
}

// readReady reads the one byte Ready writes; EOF means the writer exited.
func readReady(r io.Reader) error {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("closed without a ready byte")
		}
		return err
	}
	return nil
}

func exitReason(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func closeSockets(socks []Socket) {
	for _, s := range socks {
		s.File.Close()
	}
}

// Executable is the path this process was started as (os.Args[0], looked
// up in PATH when it has no slash), so that an upgrade starts what that
// path names now: a binary renamed over the old one, or the new target of
// a switched symlink (/usr/local/bin/snigate -> /opt/snigate/v2/snigate).
// When os.Args[0] names nothing executable any more, it is
// os.Executable(), the file this process runs.
func Executable() (string, error) {
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, nil
		}
	}
	return os.Executable()
}
