// Package gateway assembles snigate from its configuration: it builds the
// route table, upstream pools, certificate watchers and DNS handler of one
// configuration file (a generation), opens the listeners (or takes those
// inherited from systemd or from the process it upgrades), serves, reloads
// on SIGHUP or when the file changes (swapping a new generation in
// atomically, upstream state carried over, listener addresses applied),
// hands its sockets to a new binary on SIGUSR2, and drains on
// SIGTERM/SIGINT. It implements the admin runtime API (routes,
// configuration status, reload, the readiness switch) and tells systemd
// its state (sd_notify).
//
//	g, err := gateway.New(gateway.Options{ConfigFile: "/etc/snigate/snigate.yaml"})
//	if err != nil { ... }          // a config.ErrorList for an invalid file
//	err = g.Run(ctx)               // returns after a drain, or on a listener failure
//
// Check is `snigate check`: Validate parses the file and builds what Run
// would start with (the same builder, with side effects that open
// nothing), and with probe Probe dials every upstream through what that
// build made:
//
//	built, rep, err := gateway.Validate(path, nil) // a config.ErrorList in err, and in rep.Errors
//	defer built.Close()
//	err = gateway.Probe(ctx, built, os.Stdout)    // ErrProbeFailed when an upstream failed
//
// WriteNodeConfig is `snigate node-config`: NodeConfig turns the
// configuration into internal/nodeconfig's input.
package gateway
