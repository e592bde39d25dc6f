// Package gateway assembles snigate from its configuration: it builds the
// route table, upstream pools, certificate watchers and DNS handler of one
// configuration file (a generation), opens the listeners, serves, reloads
// on SIGHUP or when the file changes (swapping a new generation in
// atomically, upstream state carried over), and drains on SIGTERM/SIGINT.
//
//	g, err := gateway.New(gateway.Options{ConfigFile: "/etc/snigate/snigate.yaml"})
//	if err != nil { ... }          // a config.ErrorList for an invalid file
//	err = g.Run(ctx)               // returns after a drain, or on a listener failure
//
// Check is `snigate check`: validation, and with probe a dial of every
// upstream. WriteNodeConfig is `snigate node-config`: NodeConfig turns the
// configuration into internal/nodeconfig's input.
package gateway
