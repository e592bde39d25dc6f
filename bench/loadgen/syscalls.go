package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// cmdSyscalls splits a process's CPU time per connection by system call,
// from `perf script -F comm,period,ip,sym,dso` of a `perf record -a -g`
// taken under a steady connection rate (bench/syscalls.sh). Each sample's
// call chain names the system call it was in (the first user-space
// wrapper above the kernel's entry), "user" when it was in user space,
// or a kernel category when it was in neither (interrupts, scheduling).
// It prints microseconds of CPU per connection: the same figure for every
// proxy, whatever language it is written in.
func cmdSyscalls(args []string) error {
	fs := flag.NewFlagSet("syscalls", flag.ExitOnError)
	comm := fs.String("comm", "", "process name (perf's comm) to count (required)")
	conns := fs.Float64("conns", 0, "connections handled while perf recorded (required)")
	top := fs.Int("top", 18, "rows to print")
	fs.Parse(args)
	if *comm == "" || *conns <= 0 {
		return fmt.Errorf("-comm and -conns are required")
	}
	split, err := splitSyscalls(os.Stdin, *comm)
	if err != nil {
		return err
	}
	return printSplit(os.Stdout, split, *conns, *top)
}

// syscallSplit is CPU nanoseconds by category.
type syscallSplit map[string]float64

func splitSyscalls(r io.Reader, comm string) (syscallSplit, error) {
	split := syscallSplit{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur string
	var period float64
	var frames []string
	flush := func() {
		if cur == comm && len(frames) > 0 {
			split[classify(frames)] += period
		}
		cur, frames = "", frames[:0]
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] != ' ' && line[0] != '\t':
			flush()
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			p, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				return nil, fmt.Errorf("sample header %q: want COMM PERIOD (perf script -F comm,period,ip,sym,dso)", line)
			}
			cur, period = strings.Join(f[:len(f)-1], " "), p
		default:
			frames = append(frames, strings.TrimSpace(line))
		}
	}
	flush()
	return split, sc.Err()
}

// frame is "ADDR SYMBOL (DSO)"; symbol and whether it is the kernel's.
func frame(s string) (sym string, kernel bool) {
	kernel = strings.Contains(s, "[kernel")
	if _, rest, ok := strings.Cut(s, " "); ok {
		s = rest
	}
	if i := strings.LastIndex(s, " ("); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "+0x"); i >= 0 {
		s = s[:i]
	}
	return s, kernel
}

// genericWrapper matches the layers between a program and the kernel that
// do not say which system call it is.
var genericWrapper = regexp.MustCompile(`^(internal/runtime/syscall/linux\.Syscall6|syscall\.(Raw)?Syscall6?(\.abi0)?|golang\.org/x/sys/unix\.(Raw)?Syscall6?(NoError)?|golang\.org/x/sys/unix\.syscall_syscall6?|syscall\.rawSyscallNoError|syscall\.RawSyscallNoError|internal/poll\.ignoringEINTR.*|entry_SYSCALL.*|syscall|__syscall_cancel.*|__internal_syscall_cancel|\[unknown\])$`)

// syscallNames maps user-space wrappers to the system call they make.
var syscallNames = []struct {
	re   *regexp.Regexp
	name string
}{
	{regexp.MustCompile(`runtime_pollOpen|runtime_pollClose|epoll_ctl|EpollCtl|netpollopen|netpollclose`), "epoll_ctl"},
	{regexp.MustCompile(`findRunnable|netpoll$|epoll_wait|epoll_pwait|EpollWait`), "epoll_wait"},
	{regexp.MustCompile(`futex|usleep|osyield|nanosleep|sched_yield`), "futex/sleep (scheduler)"},
	{regexp.MustCompile(`(?i)accept`), "accept"},
	{regexp.MustCompile(`(?i)connect`), "connect"},
	{regexp.MustCompile(`(?i)(^|[._])close`), "close"},
	{regexp.MustCompile(`(?i)splice`), "splice"},
	{regexp.MustCompile(`(?i)shutdown`), "shutdown"},
	{regexp.MustCompile(`(?i)socket`), "socket"},
	{regexp.MustCompile(`(?i)setsockopt`), "setsockopt"},
	{regexp.MustCompile(`(?i)getsockopt|getsockname|getpeername|fcntl|ioctl`), "getsockopt/getsockname/fcntl/ioctl"},
	{regexp.MustCompile(`(?i)(recv|read)`), "read/recv"},
	{regexp.MustCompile(`(?i)(send|write)`), "write/send"},
	{regexp.MustCompile(`(?i)clock_gettime|gettime`), "clock_gettime"},
}

func classify(frames []string) string {
	syms := make([]string, len(frames))
	kern := make([]bool, len(frames))
	entry := -1
	for i, f := range frames {
		syms[i], kern[i] = frame(f)
		if entry < 0 && syms[i] == "do_syscall_64" {
			entry = i
		}
	}
	if entry < 0 {
		if !kern[0] {
			return "user"
		}
		return "kernel, outside system calls (interrupts, scheduling)"
	}
	for j := entry + 1; j < len(syms); j++ {
		if kern[j] || genericWrapper.MatchString(syms[j]) {
			continue
		}
		for _, n := range syscallNames {
			if n.re.MatchString(syms[j]) {
				return "sys " + n.name
			}
		}
		return "sys other (" + syms[j] + ")"
	}
	return "sys other"
}

func printSplit(w io.Writer, split syscallSplit, conns float64, top int) error {
	type row struct {
		name string
		ns   float64
	}
	var rows []row
	var total, sys float64
	for k, v := range split {
		rows = append(rows, row{k, v})
		total += v
		if strings.HasPrefix(k, "sys ") {
			sys += v
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].ns > rows[j].ns })
	us := func(ns float64) float64 { return ns / conns / 1e3 }
	fmt.Fprintf(w, "| category | µs CPU per connection | share |\n|---|--:|--:|\n")
	fmt.Fprintf(w, "| **total** | **%.1f** | 100 %% |\n", us(total))
	fmt.Fprintf(w, "| all system calls | %.1f | %.0f %% |\n", us(sys), 100*sys/total)
	for i, r := range rows {
		if i == top {
			break
		}
		fmt.Fprintf(w, "| %s | %.1f | %.0f %% |\n", r.name, us(r.ns), 100*r.ns/total)
	}
	return nil
}
