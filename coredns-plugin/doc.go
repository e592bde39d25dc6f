// Package snigate is the snigate CoreDNS plugin: it answers the names a
// snigate gateway routes with the gateway's addresses, exactly as snigate's
// embedded responder does (the answers come from dnsresponder.Policy, the
// name matching from names.Table), and passes every other query to the
// next plugin.
//
// The directive, the package and the handler's Name() are all "snigate":
//
//	registry.example.test example.test {
//	    snigate {
//	        answer 192.0.2.10 2001:db8::10
//	        ttl 30
//	        config /etc/snigate/snigate.yaml   # optional: the gateway's routed names
//	        names registry.example.test *.mirror.example.test
//	        answer_check port 443 interval 2s timeout 1s fall 2 rise 2   # optional: only gateways that are up
//	    }
//	    forward . /etc/resolv.conf
//	}
//
// Importing the package registers the directive with CoreDNS; cmd/coredns
// also places it in the plugin chain (right after hosts) and runs CoreDNS:
//
//	go build -o bin/coredns ./cmd/coredns    # or: make build
//
// With `config`, the file is read at setup and re-read in a goroutine that
// OnStartup starts and OnShutdown stops and waits for; a bad file keeps the
// last good names. The answer check (answer_check) runs in a goroutine of
// its own, started and stopped the same way. See README.md for the syntax and semantics.
package snigate
