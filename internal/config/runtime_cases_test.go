package config

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// runtimeFaultCases are files that `check` once accepted and `run` then
// failed or misbehaved with: each is now an error at its key, saying what
// would have gone wrong and what to write instead.
var runtimeFaultCases = []errorCase{
	{name: "http.methods without GET refuses every pull", yaml: minimalBridge + "    http: {methods: [HEAD, PUT]}\n", want: []string{
		"snigate.yaml:10: routes[0].http.methods: want GET among the methods, got [HEAD, PUT]: every pull, and the GET /v2/ every client sends first, would be refused with 405; add GET (and HEAD)",
	}},
	{name: "http.repositories starting with the registry host refuses every pull", yaml: minimalBridge +
		"    http: {repositories: [\"a.example.com/team/*\", \"10.0.0.1/x\", \"team/app\"]}\n", want: []string{
		`snigate.yaml:10: routes[0].http.repositories[0]: "a.example.com/team/*" starts with the registry's host name a.example.com: nodes ask for repositories without it, so the pattern matches nothing and every pull is refused with 403; write "team/*"`,
		`snigate.yaml:10: routes[0].http.repositories[1]: "10.0.0.1/x" starts with the registry's host name 10.0.0.1: nodes ask for repositories without it, so the pattern matches nothing and every pull is refused with 403; write "x"`,
	}},
	{name: "serve.client_ca that cannot issue client certificates refuses every node", yaml: bridgeWith(`    serve: {cert: serve.crt, key: serve.key, client_ca: server-ca.crt}
    upstream_tls: {}
`), want: []string{
		`snigate.yaml:8: routes[0].serve.client_ca: server-ca.crt cannot issue node (client) certificates: "CN=server-ca" has an extended key usage without clientAuth; every node would be refused. Use the CA that signs the nodes' clientAuth certificates, or one from snigate ca init (snigate ca issue-node)`,
	}},
	{name: "dns.forward to the gateway's own listen.dns loops", yaml: "listen:\n  tls: [\":443\"]\n  dns: \"127.0.0.1:5353\"\ndns:\n  answer: [192.0.2.10]\n" +
		"  forward: [\"127.0.0.1:5353\", \"10.96.0.10\"]\n" + routesSplice, want: []string{
		`snigate.yaml:6: dns.forward[0]: "127.0.0.1:5353" is this gateway's own listen.dns "127.0.0.1:5353": forwarded queries would come back to it in a loop; name the resolver the gateway itself should ask (the site's or cluster's resolver, as in /etc/resolv.conf)`,
	}},
	{name: "dns.forward to loopback when listen.dns is every address loops", yaml: "listen:\n  tls: [\":443\"]\n  dns: \":53\"\ndns:\n  answer: [192.0.2.10]\n" +
		"  forward: [localhost, \"[::1]:53\", \"127.0.0.53\"]\n" + routesSplice, want: []string{
		`snigate.yaml:6: dns.forward[0]: "localhost:53" is this gateway's own listen.dns ":53": forwarded queries would come back to it in a loop; name the resolver the gateway itself should ask (the site's or cluster's resolver, as in /etc/resolv.conf)`,
		`snigate.yaml:6: dns.forward[1]: "[::1]:53" is this gateway's own listen.dns ":53": forwarded queries would come back to it in a loop; name the resolver the gateway itself should ask (the site's or cluster's resolver, as in /etc/resolv.conf)`,
		`snigate.yaml:6: dns.forward[2]: "127.0.0.53:53" is this gateway's own listen.dns ":53": forwarded queries would come back to it in a loop; name the resolver the gateway itself should ask (the site's or cluster's resolver, as in /etc/resolv.conf)`,
	}},
	{name: "an upstream that is the gateway's own listen.tls loops", yaml: "listen:\n  tls: [\":443\", \"127.0.0.1:8443\"]\nroutes:\n" +
		"  - name: r\n    sni: [a.example.com]\n    mode: splice\n    upstreams: [\"127.0.0.1:443\", \"127.0.0.1:8443\", \"10.0.0.1:443\"]\n" +
		"  - name: b\n    sni: [b.example.com]\n    mode: bridge\n    upstreams: [\"localhost:443\"]\n    serve: {cert: serve.crt, key: serve.key}\n    upstream_tls: {}\n", want: []string{
		`snigate.yaml:7: routes[0].upstreams[0]: "127.0.0.1:443" is this gateway's own listen.tls ":443": the connection would come back to route "r" in a loop; name the registry's address (the host and port the gateway itself should dial)`,
		`snigate.yaml:7: routes[0].upstreams[1]: "127.0.0.1:8443" is this gateway's own listen.tls "127.0.0.1:8443": the connection would come back to route "r" in a loop; name the registry's address (the host and port the gateway itself should dial)`,
		`snigate.yaml:11: routes[1].upstreams[0]: "localhost:443" is this gateway's own listen.tls ":443": the connection would come back to route "b" in a loop; name the registry's address (the host and port the gateway itself should dial)`,
	}},
}

// TestChainedRouteIsNoLoop: a bridge route may dial the gateway's own
// listen.tls on purpose when upstream_tls.server_name names another
// route (which then splices); that is a chain, not a loop.
func TestChainedRouteIsNoLoop(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	yaml := "listen:\n  tls: [\":443\"]\nroutes:\n" +
		"  - name: edge\n    sni: [a.example.com]\n    mode: bridge\n    upstreams: [\"127.0.0.1:443\"]\n" +
		"    serve: {cert: serve.crt, key: serve.key}\n    upstream_tls: {server_name: b.example.com}\n" +
		"  - name: out\n    sni: [b.example.com]\n    mode: splice\n    upstreams: [\"10.0.0.1:443\"]\n"
	if got := parseInDir(t, dir, yaml); got != nil {
		t.Fatalf("errors:\n%s", strings.Join(got, "\n"))
	}
}

// TestForwardToALocalAddressLoops: listen.dns on every address accepts
// queries sent to any address of the host, not only loopback.
func TestForwardToALocalAddressLoops(t *testing.T) {
	dir := t.TempDir()
	yaml := "listen:\n  tls: [\":443\"]\n  dns: \"0.0.0.0:53\"\ndns:\n  answer: [192.0.2.10]\n  forward: [10.9.8.7, 10.9.8.8]\n" + routesSplice
	want := []string{`snigate.yaml:6: dns.forward[0]: "10.9.8.7:53" is this gateway's own listen.dns "0.0.0.0:53": forwarded queries would come back to it in a loop; name the resolver the gateway itself should ask (the site's or cluster's resolver, as in /etc/resolv.conf)`}
	if got := parseInDirLocal(t, dir, yaml, netip.MustParseAddr("10.9.8.7")); !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// notYAMLCases: a file that is not a configuration at all (a password
// file, a PEM file) is one message with the start of its text, not the
// whole file quoted.
var notYAMLCases = []errorCase{
	{name: "a text file is not a configuration", yaml: "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\nbin:x:2:2:bin:/bin:/usr/sbin/nologin\n", want: []string{
		`snigate.yaml:1: not a snigate configuration: want a YAML mapping with keys listen, timeouts, max_connections, max_connections_per_client, max_handshakes, dns, default_route, routes, debug, log, got the text "root:x:0:0:root:/root:/bin/bash daemon:x:1:1:daemon:/usr/sbi"... (116 bytes); is this the right file?`,
	}},
}
