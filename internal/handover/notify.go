package handover

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Messages of sd_notify(3) that snigate sends.
const (
	NotifyReady    = "READY=1"
	NotifyStopping = "STOPPING=1"
)

// Notify sends state, lines of sd_notify(3) such as "READY=1", to the
// service manager's socket named by NOTIFY_SOCKET. It reports false, and no
// error, when NOTIFY_SOCKET is not set (not run by systemd with
// Type=notify or Type=notify-reload). The variable is left in place: a
// process started by Spawn reports to the same manager.
func Notify(state ...string) (bool, error) {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return false, nil
	}
	if addr[0] == '@' { // an abstract socket
		addr = "\x00" + addr[1:]
	} else if addr[0] != '/' {
		return false, fmt.Errorf("sd_notify: NOTIFY_SOCKET=%q: want a socket path or an @abstract name", addr)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return false, fmt.Errorf("sd_notify: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(strings.Join(state, "\n") + "\n")); err != nil {
		return false, fmt.Errorf("sd_notify: %w", err)
	}
	return true, nil
}

// Reloading is the message a Type=notify-reload service sends when a
// reload begins: RELOADING=1 with the CLOCK_MONOTONIC time in
// microseconds, which systemd requires to tell this reload from an
// earlier one. READY=1 ends it.
func Reloading() (string, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return "", errors.Join(errors.New("sd_notify: read CLOCK_MONOTONIC"), err)
	}
	usec := ts.Nano() / 1000
	return fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", usec), nil
}

// MainPID is the message that makes this process the service's main
// process, sent by a process that took over with Ready (the unit needs
// NotifyAccess=all for systemd to accept it from a process other than the
// main one).
func MainPID() string { return fmt.Sprintf("MAINPID=%d", os.Getpid()) }

// Status is a STATUS= line, shown by systemctl status.
func Status(s string) string { return "STATUS=" + strings.ReplaceAll(s, "\n", " ") }
