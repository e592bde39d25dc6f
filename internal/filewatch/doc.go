// Package filewatch notices that a file changed: an in-place write, a new
// file renamed over it, a Kubernetes ..data symlink swap, or the file
// removed and restored. It is the one mechanism snigate uses for every
// watched file except key pairs (which cloudflare/certinel loads and
// watches; its supervisor in internal/certs uses this package's ID for its
// backstop poll): CA bundles, the configuration file, and the CoreDNS
// plugin's configuration file.
//
// A Watcher combines fsnotify on the file's directory (and on the
// directory of a symlink's target) with a settle delay, so that a burst of
// writes is reported once, and a poll of the file's identity (Stat) as the
// backstop for a watch that could not be set up or lost events:
//
//	w, err := filewatch.New(filewatch.Config{File: "/etc/snigate/ca.crt", ChangedFunc: reread})
//	go w.Run(ctx) // returns nil once ctx is done and its goroutines have finished
//
// ChangedFunc runs on Run's goroutine; it re-reads the file itself and
// decides whether the contents changed.
package filewatch
