package handover

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

// envChild makes the test binary act as the new process of a hand-over
// (see childMain) instead of running the tests.
const envChild = "HANDOVER_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		os.Exit(childMain(mode))
	}
	goleak.VerifyTestMain(m)
}

// childMain is the new process: "serve" claims listen.tls=ADDR from
// HANDOVER_TEST_ADDR, calls Ready and answers two connections with
// "child PID"; "exit" exits before Ready; "systemd" first makes
// LISTEN_PID its own pid, as systemd does between fork and exec.
func childMain(mode string) int {
	switch mode {
	case "exit":
		return 3
	case "systemd":
		os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
	}
	in, err := Inherit()
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	addr := os.Getenv("HANDOVER_TEST_ADDR")
	ln, inherited, err := in.Listen("listen.tls", "tcp", addr, func() (net.Listener, error) {
		return net.Listen("tcp", addr)
	})
	if err != nil || !inherited {
		fmt.Fprintln(os.Stderr, "child: listener not inherited:", err)
		return 1
	}
	if _, err := in.Ready(); err != nil {
		fmt.Fprintln(os.Stderr, "child: ready:", err)
		return 1
	}
	for range 2 {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		fmt.Fprintf(c, "child %d %s\n", os.Getpid(), in.Source())
		c.Close()
	}
	return 0
}
