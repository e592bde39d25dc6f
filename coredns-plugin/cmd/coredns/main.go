// Command coredns is stock CoreDNS with the snigate plugin compiled in.
//
// The snigate directive is placed in the plugin chain right after hosts:
// behind the plugins that rewrite, filter or cache queries (rewrite, acl,
// cache, template, hosts), so an operator's deliberate per-name overrides
// still win, and in front of every backend that could return a routed
// name's real address (kubernetes, file, etcd, forward, ...).
package main

import (
	"fmt"
	"log"
	"slices"

	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/core/plugin" // every stock CoreDNS plugin
	"github.com/coredns/coredns/coremain"

	_ "github.com/snigate/snigate/coredns-plugin" // registers the snigate directive
)

// after is the directive snigate follows in the plugin chain.
const after = "hosts"

func main() {
	d, err := withDirective(dnsserver.Directives, "snigate", after)
	if err != nil {
		log.Fatal(err)
	}
	dnsserver.Directives = d
	coremain.Run()
}

// withDirective returns a copy of directives with name inserted right
// after the directive after, or directives itself when name is already
// there. An error means after is missing: a CoreDNS upgrade renamed it,
// and guessing a place could put snigate behind forward.
func withDirective(directives []string, name, after string) ([]string, error) {
	if slices.Contains(directives, name) {
		return directives, nil
	}
	i := slices.Index(directives, after)
	if i < 0 {
		return nil, fmt.Errorf("place the %s plugin: directive %q not found in CoreDNS's plugin chain", name, after)
	}
	return slices.Insert(slices.Clone(directives), i+1, name), nil
}
