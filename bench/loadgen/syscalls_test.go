package main

import (
	"strings"
	"testing"
)

// A perf script excerpt: a Go process in connect(2), in user space and in
// a softirq, a C process in close(2), and another process.
const perfScript = `snigate 250000
	ffffffff81001 __sys_connect ([kernel.kallsyms])
	ffffffff81002 do_syscall_64 ([kernel.kallsyms])
	ffffffff81003 entry_SYSCALL_64_after_hwframe ([kernel.kallsyms])
	4a1b2c internal/runtime/syscall/linux.Syscall6 (/tmp/snigate)
	4a1b2d syscall.RawSyscall6 (/tmp/snigate)
	4a1b2e golang.org/x/sys/unix.connect (/tmp/snigate)
	4a1b2f github.com/snigate/snigate/sni.rawDial (/tmp/snigate)

snigate 250000
	4a1b30 runtime.mallocgc (/tmp/snigate)
	4a1b31 github.com/snigate/snigate/sni.newSession (/tmp/snigate)

snigate 500000
	ffffffff81010 tcp_v4_rcv ([kernel.kallsyms])
	ffffffff81011 handle_softirqs ([kernel.kallsyms])

haproxy 250000
	ffffffff81020 tcp_close ([kernel.kallsyms])
	ffffffff81021 do_syscall_64 ([kernel.kallsyms])
	7f0001 __close (/usr/lib/x86_64-linux-gnu/libc.so.6)
	55aa01 fd_delete (/usr/sbin/haproxy)

loadgen 250000
	4a1b30 runtime.mallocgc (/tmp/loadgen)
`

func TestSplitSyscalls(t *testing.T) {
	split, err := splitSyscalls(strings.NewReader(perfScript), "snigate")
	if err != nil {
		t.Fatal(err)
	}
	want := syscallSplit{
		"sys connect": 250000,
		"user":        250000,
		"kernel, outside system calls (interrupts, scheduling)": 500000,
	}
	if len(split) != len(want) {
		t.Fatalf("split %v, want %v", split, want)
	}
	for k, v := range want {
		if split[k] != v {
			t.Errorf("%s = %v, want %v (split %v)", k, split[k], v, split)
		}
	}
	split, err = splitSyscalls(strings.NewReader(perfScript), "haproxy")
	if err != nil || split["sys close"] != 250000 || len(split) != 1 {
		t.Fatalf("haproxy split %v, %v; want close only", split, err)
	}
	var b strings.Builder
	printSplit(&b, syscallSplit{"sys connect": 4e6, "user": 6e6}, 1000, 10)
	for _, s := range []string{"| **total** | **10.0** | 100 % |", "| all system calls | 4.0 | 40 % |", "| user | 6.0 | 60 % |"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, b.String())
		}
	}
	if _, err := splitSyscalls(strings.NewReader("snigate notaperiod\n\tx y (z)\n"), "snigate"); err == nil {
		t.Error("a header without a period was accepted")
	}
}
