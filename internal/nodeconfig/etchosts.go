package nodeconfig

import (
	"fmt"
	"strings"
)

// etcHosts is the /etc/hosts fallback: one line per gateway address with
// every exact routed name. A wildcard cannot be written there; a comment
// says so.
func etcHosts(c Config) []byte {
	var b strings.Builder
	b.WriteString("# snigate node-config: append to /etc/hosts when the node's resolver cannot be changed\n")
	var exact, wild []string
	for _, n := range c.Names {
		if strings.HasPrefix(n, "*.") {
			wild = append(wild, n)
		} else {
			exact = append(exact, n)
		}
	}
	if len(wild) > 0 {
		fmt.Fprintf(&b, "# not covered (no wildcards in /etc/hosts; add each name you pull from): %s\n", strings.Join(wild, " "))
	}
	if len(exact) > 0 {
		for _, a := range c.Answers {
			fmt.Fprintf(&b, "%s %s\n", a, strings.Join(exact, " "))
		}
	}
	return []byte(b.String())
}
