// Package handover keeps snigate's listening sockets open across restarts
// and upgrades, so that no connection is refused while one process gives
// way to the next.
//
// Two sources of inherited sockets are understood:
//
//   - systemd socket activation: LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES
//     (sd_listen_fds(3)); the sockets are matched to the configuration by
//     the address they are bound to.
//   - a hand-over from a running snigate (Spawn, on SIGUSR2): the old
//     process starts the new binary with its sockets as extra files, named
//     in SNIGATE_HANDOVER_FDS by the configuration key and address that
//     opened them, and waits until the new process calls Ready before it
//     drains.
//
// Usage, in the process that serves:
//
//	in, err := handover.Inherit()           // reads and clears the environment
//	ln, err := in.Listen("listen.tls", "tcp", ":443", open)
//	...                                      // start serving on every socket
//	in.Ready()                               // closes the unclaimed, tells the old process
//
// and in the process that gives way:
//
//	child, err := handover.Spawn(ctx, handover.SpawnConfig{Sockets: socks})
//	// err == nil: the new process serves; stop accepting and drain.
//
// Notify sends sd_notify(3) messages (READY=1, RELOADING=1, STOPPING=1,
// MAINPID=) to the service manager when NOTIFY_SOCKET is set.
package handover
