// Package config reads snigate's YAML configuration file into a validated
// Config of typed values.
//
// The file is strict: an unknown key, a key given twice, a value of the
// wrong type, a key that does not belong to a route's mode, a duplicate
// route or SNI name, and a certificate file that is missing, does not
// match its key or has expired are all errors. Every error found is
// reported, each with the file, the line, the dotted key and what was
// expected:
//
//	snigate.yaml:14: routes[0].health.interval: want a duration such as "3s", got "3"
//
// Defaults (the Default* constants) are filled in, file names are made
// absolute against the configuration file's directory, and the files they
// name are read and checked, so that a Config that parses can be run.
// Nothing is kept open: the gateway loads the certificates again (and
// watches them) when it builds its components.
//
// Usage, as in "snigate check -c FILE":
//
//	cfg, err := config.Load("/etc/snigate/snigate.yaml")
//	var errs config.ErrorList
//	if errors.As(err, &errs) {
//		for _, e := range errs { // e.File, e.Line, e.Key, e.Msg
//			fmt.Fprintln(os.Stderr, e)
//		}
//		os.Exit(2)
//	}
//	for _, r := range cfg.Routes {
//		fmt.Println(r.Name, r.Mode, r.SNI, r.Upstreams)
//	}
//
// Parse does the same for bytes already read; its file argument names the
// file in messages and anchors relative file names.
//
// Server names follow the one set of rules in package names
// (names.CheckPattern, names.CheckHost, names.Canonical), which every other
// part of snigate applies too; the packages that do the work never import
// config.
package config
