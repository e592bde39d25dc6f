package config

import "strings"

// errorCase is a configuration file and every error it must produce, as
// printed by ErrorList.Error, with the test directory removed from paths.
type errorCase struct {
	name string
	yaml string
	want []string
}

// The test PKI (pki_test.go) sits next to snigate.yaml, so relative names
// such as serve.crt refer to it.
var errorCases = []errorCase{
	// The document as a whole.
	{name: "empty file", yaml: ``, want: []string{
		"snigate.yaml:1: the file is empty: want a mapping with at least listen.tls and routes",
	}},
	{name: "only comments", yaml: "# nothing here\n", want: []string{
		"snigate.yaml:1: the file is empty: want a mapping with at least listen.tls and routes",
	}},
	{name: "only a document marker", yaml: "---\n", want: []string{
		"snigate.yaml:1: the file is empty: want a mapping with at least listen.tls and routes",
	}},
	{name: "not YAML", yaml: "listen:\n  tls: [\":443\"\nroutes: []\n", want: []string{
		"snigate.yaml:2: not valid YAML: did not find expected ',' or ']'",
	}},
	{name: "not YAML on the first line", yaml: "listen: tls: x\n", want: []string{
		"snigate.yaml:1: not valid YAML: mapping values are not allowed in this context",
	}},
	{name: "bad indentation", yaml: "listen:\n  tls: [\":443\"]\n connect: x\n", want: []string{
		"snigate.yaml:3: not valid YAML: did not find expected key",
	}},
	{name: "unterminated string", yaml: "listen:\n  tls: [\":443\"]\nroutes:\n  - name: \"a\n", want: []string{
		"snigate.yaml:4: not valid YAML: found unexpected end of stream",
	}},
	{name: "tab indentation", yaml: "listen:\n\ttls: [\":443\"]\n", want: []string{
		"snigate.yaml:2: not valid YAML: found character that cannot start any token",
	}},
	{name: "unknown anchor", yaml: "listen:\n  tls: [\":443\"]\nroutes: *routes\n", want: []string{
		"snigate.yaml:3: not valid YAML: unknown anchor 'routes' referenced",
	}},
	{name: "top level is a list", yaml: "- listen\n- routes\n", want: []string{
		"snigate.yaml:1: want a mapping with keys listen, timeouts, max_connections, max_connections_per_client, max_handshakes, dns, default_route, routes, debug, log, got a list",
	}},
	{name: "two documents", yaml: minimalSplice + "---\nlisten: {}\n", want: []string{
		"snigate.yaml:8: a second YAML document (after ---): want exactly one",
	}},

	// Keys.
	{name: "unknown top-level key with a close spelling", yaml: minimalSplice + "rotues: []\n", want: []string{
		`snigate.yaml:8: rotues: unknown key (did you mean "routes"?); allowed here: listen, timeouts, max_connections, max_connections_per_client, max_handshakes, dns, default_route, routes, debug, log`,
	}},
	{name: "unknown top-level key", yaml: minimalSplice + "logging: debug\n", want: []string{
		"snigate.yaml:8: logging: unknown key; allowed here: listen, timeouts, max_connections, max_connections_per_client, max_handshakes, dns, default_route, routes, debug, log",
	}},
	{name: "debug.pprof is a boolean", yaml: minimalSplice + "debug:\n  pprof: yes\n", want: []string{
		`snigate.yaml:9: debug.pprof: want true or false, got "yes"`,
	}},
	{name: "debug has only pprof", yaml: minimalSplice + "debug:\n  trace: true\n", want: []string{
		"snigate.yaml:9: debug.trace: unknown key; allowed here: pprof",
	}},
	{name: "duplicate top-level key", yaml: minimalSplice + "listen:\n  tls: [\":8443\"]\n", want: []string{
		"snigate.yaml:8: listen: duplicate key (first at line 1)",
	}},
	{name: "merge keys are not supported", yaml: `listen:
  tls: [":443"]
routes:
  - &r
    name: a
    sni: [a.example.com]
    mode: splice
    upstreams: ["10.0.0.1:443"]
  - <<: *r
    name: b
    sni: [b.example.com]
`, want: []string{
		"snigate.yaml:9: routes[1]: merge keys (<<) are not supported: write the keys out",
	}},
	{name: "non-scalar key", yaml: "? [a, b]\n: c\n" + minimalSplice, want: []string{
		"snigate.yaml:1: want a plain key (one of listen, timeouts, max_connections, max_connections_per_client, max_handshakes, dns, default_route, routes, debug, log), got a list",
	}},
	{name: "wrong type for a section", yaml: "listen: [\":443\"]\nroutes: {name: r}\n", want: []string{
		"snigate.yaml:1: listen: want a mapping with keys tls, connect, dns, admin, allow, proxy_protocol_from, got a list",
		"snigate.yaml:2: routes: want a list such as [{name: registry, sni: [...], mode: bridge, ...}], got a mapping",
	}},

	// listen:
	{name: "listen missing", yaml: "routes: []\n", want: []string{
		`snigate.yaml:1: listen.tls: required: one or more SNI listener addresses such as [":443"]`,
		"snigate.yaml:1: routes: required: at least one route (name, sni, mode, upstreams)",
	}},
	{name: "listen.tls empty", yaml: "listen:\n  tls: []\n" + routesSplice, want: []string{
		`snigate.yaml:2: listen.tls: required: one or more SNI listener addresses such as [":443"]`,
	}},
	{name: "listen.tls not a list", yaml: "listen:\n  tls: \":443\"\n" + routesSplice, want: []string{
		`snigate.yaml:2: listen.tls: want a list such as [":443"], got ":443"`,
	}},
	{name: "listen addresses", yaml: `listen:
  tls: ["443", "x:99999", "bad host:443", ":443", "[::1]:8443", ":443"]
  connect: "[::1]:8443"
  dns: 53
  admin: unix:admin.sock
  allow: ["10.0.0.0/33", "10.0.0.1", "fe80::/10", "example.com"]
  proxy_protocol_from: "10.0.0.0/8"
  tsl: []
` + routesSplice, want: []string{
		`snigate.yaml:2: listen.tls[0]: want host:port such as ":443", got "443" (missing port in address)`,
		`snigate.yaml:2: listen.tls[1]: want host:port such as ":443", got "x:99999" (the port must be a number from 0 to 65535)`,
		`snigate.yaml:2: listen.tls[2]: want host:port such as ":443", got "bad host:443" (invalid host)`,
		`snigate.yaml:2: listen.tls[5]: ":443" is already used by listen.tls[3]`,
		`snigate.yaml:3: listen.connect: "[::1]:8443" is already used by listen.tls[4]`,
		`snigate.yaml:4: listen.dns: want host:port such as ":53", got "53" (missing port in address)`,
		`snigate.yaml:4: dns: required when listen.dns is set: a section with at least answer: ["192.0.2.10"], the address given for routed names`,
		`snigate.yaml:5: listen.admin: want host:port such as "127.0.0.1:9090", or "unix:/run/snigate/admin.sock", got "unix:admin.sock" (the socket path must be absolute)`,
		`snigate.yaml:6: listen.allow[0]: want a CIDR such as "10.0.0.0/8", got "10.0.0.0/33"`,
		`snigate.yaml:6: listen.allow[3]: want a CIDR such as "10.0.0.0/8", got "example.com"`,
		`snigate.yaml:7: listen.proxy_protocol_from: want a list such as ["10.0.0.0/8"], got "10.0.0.0/8"`,
		`snigate.yaml:8: listen.tsl: unknown key (did you mean "tls"?); allowed here: tls, connect, dns, admin, allow, proxy_protocol_from`,
	}},
	{name: "listen.admin not host:port", yaml: "listen:\n  tls: [\":443\"]\n  admin: localhost\n" + routesSplice, want: []string{
		`snigate.yaml:3: listen.admin: want host:port such as "127.0.0.1:9090", or "unix:/run/snigate/admin.sock", got "localhost" (missing port in address)`,
	}},

	// timeouts: and max_connections:
	{name: "timeouts", yaml: minimalSplice + `timeouts:
  client_hello: 3
  connect: [5s]
  idle: -1s
  drain: 0s
  idel: 1h
  first_request: -10s
max_connections: 0
`, want: []string{
		`snigate.yaml:9: timeouts.client_hello: want a duration such as "5s", got "3"`,
		`snigate.yaml:10: timeouts.connect: want a duration such as "5s", got a list`,
		`snigate.yaml:11: timeouts.idle: want a duration greater than 0 such as "1h", got "-1s"`,
		`snigate.yaml:12: timeouts.drain: want a duration greater than 0 such as "30s", got "0s"`,
		`snigate.yaml:13: timeouts.idel: unknown key (did you mean "idle"?); allowed here: client_hello, connect, idle, drain, first_request`,
		`snigate.yaml:14: timeouts.first_request: want a duration greater than 0 such as "10s", got "-10s"`,
		"snigate.yaml:15: max_connections: want an integer of at least 1, got 0",
	}},
	{name: "max_connections not an integer", yaml: minimalSplice + "max_connections: many\n", want: []string{
		`snigate.yaml:8: max_connections: want an integer of at least 1, got "many"`,
	}},
	{name: "max_connections a fraction", yaml: minimalSplice + "max_connections: 1.5\n", want: []string{
		`snigate.yaml:8: max_connections: want an integer of at least 1, got "1.5"`,
	}},
	{name: "limits out of range", yaml: minimalSplice + "max_connections: 100\nmax_connections_per_client: -1\nmax_handshakes: 101\n", want: []string{
		"snigate.yaml:9: max_connections_per_client: want an integer of at least 0, got -1",
		"snigate.yaml:10: max_handshakes: want an integer from 1 to 100, got 101",
	}},
	{name: "max_handshakes zero", yaml: minimalSplice + "max_handshakes: 0\n", want: []string{
		"snigate.yaml:8: max_handshakes: want an integer from 1 to 10000, got 0",
	}},

	// dns:
	{name: "dns required by listen.dns", yaml: "listen:\n  tls: [\":443\"]\n  dns: \":53\"\n" + routesSplice, want: []string{
		`snigate.yaml:3: dns: required when listen.dns is set: a section with at least answer: ["192.0.2.10"], the address given for routed names`,
	}},
	{name: "dns.answer required", yaml: minimalSplice + "dns:\n  ttl: 10s\n", want: []string{
		`snigate.yaml:9: dns.answer: required: one or more addresses given for routed names, such as ["192.0.2.10"]`,
	}},
	{name: "dns values", yaml: minimalSplice + `dns:
  answer: ["192.0.2.10", "1.2.3", "192.0.2.10"]
  ttl: 500ms
  forward: ["10.0.0.1:99999", "a b", "10.0.0.1", "10.0.0.1:53"]
  names: ["*.*.example.com", "ok.example.com", "OK.example.com."]
`, want: []string{
		`snigate.yaml:9: dns.answer[1]: want an IP address such as "192.0.2.10", got "1.2.3"`,
		`snigate.yaml:9: dns.answer[2]: "192.0.2.10" is listed twice (first at line 9)`,
		`snigate.yaml:10: dns.ttl: want a duration of at least 1s (DNS TTLs are whole seconds), got "500ms"`,
		`snigate.yaml:11: dns.forward[0]: want host or host:port such as "10.96.0.10:53", got "10.0.0.1:99999" (the port must be a number from 1 to 65535)`,
		`snigate.yaml:11: dns.forward[1]: want host or host:port such as "10.96.0.10:53", got "a b" (invalid host)`,
		`snigate.yaml:11: dns.forward[3]: "10.0.0.1:53" is listed twice (first at line 11)`,
		`snigate.yaml:12: dns.names[0]: want a name such as "registry.example.com" or "*.example.com", got "*.*.example.com": after "*.": label "*" has '*'; a wildcard is allowed only as the whole first label of a route name, as in "*.example.com"`,
		`snigate.yaml:12: dns.names[2]: "ok.example.com" is listed twice (first at line 12)`,
	}},
	{name: "dns.allow values", yaml: minimalSplice + `dns:
  answer: ["192.0.2.10"]
  allow: ["10.0.0.0/33", "10.0.0.1", "example.com", "fe80::/10"]
`, want: []string{
		`snigate.yaml:10: dns.allow[0]: want a CIDR such as "10.0.0.0/8", got "10.0.0.0/33"`,
		`snigate.yaml:10: dns.allow[2]: want a CIDR such as "10.0.0.0/8", got "example.com"`,
	}},
	{name: "dns.allow not a list", yaml: minimalSplice + "dns:\n  answer: [\"192.0.2.10\"]\n  allow: 10.0.0.0/8\n", want: []string{
		`snigate.yaml:10: dns.allow: want a list such as ["10.0.0.0/8"], got "10.0.0.0/8"`,
	}},
	{name: "dns.allwo misspelt", yaml: minimalSplice + "dns:\n  answer: [\"192.0.2.10\"]\n  allwo: []\n", want: []string{
		`snigate.yaml:10: dns.allwo: unknown key (did you mean "allow"?); allowed here: answer, ttl, forward, names, allow, answer_check`,
	}},
	{name: "dns.answer_check values", yaml: minimalSplice + `dns:
  answer: ["192.0.2.10", "192.0.2.11"]
  answer_check:
    port: 70000
    interval: 2
    timeout: 0s
    fall: 0
    rise: x
    path: /v2/
`, want: []string{
		`snigate.yaml:11: dns.answer_check.port: want an integer from 1 to 65535, got 70000`,
		`snigate.yaml:12: dns.answer_check.interval: want a duration such as "2s", got "2"`,
		`snigate.yaml:13: dns.answer_check.timeout: want a duration greater than 0 such as "1s", got "0s"`,
		`snigate.yaml:14: dns.answer_check.fall: want an integer of at least 1, got 0`,
		`snigate.yaml:15: dns.answer_check.rise: want an integer of at least 1, got "x"`,
		`snigate.yaml:16: dns.answer_check.path: unknown key; allowed here: port, interval, timeout, fall, rise`,
	}},
	{name: "dns.answer_check timeout beyond interval", yaml: minimalSplice + "dns:\n  answer: [\"192.0.2.10\"]\n  answer_check:\n    interval: 1s\n    timeout: 3s\n", want: []string{
		`snigate.yaml:12: dns.answer_check.timeout: want at most dns.answer_check.interval (1s), got "3s"`,
	}},
	{name: "dns.answer_check interval below the default timeout", yaml: minimalSplice + "dns:\n  answer: [\"192.0.2.10\"]\n  answer_check:\n    interval: 500ms\n", want: []string{
		`snigate.yaml:11: dns.answer_check.interval: want at least dns.answer_check.timeout (1s, the default; set timeout too for a shorter interval), got "500ms"`,
	}},
	{name: "dns.answer_check not a mapping", yaml: minimalSplice + "dns:\n  answer: [\"192.0.2.10\"]\n  answer_check: 443\n", want: []string{
		`snigate.yaml:10: dns.answer_check: want a mapping with keys port, interval, timeout, fall, rise, got "443"`,
	}},

	// routes:
	{name: "routes missing", yaml: "listen:\n  tls: [\":443\"]\n", want: []string{
		"snigate.yaml:1: routes: required: at least one route (name, sni, mode, upstreams)",
	}},
	{name: "routes empty", yaml: "listen:\n  tls: [\":443\"]\nroutes: []\n", want: []string{
		"snigate.yaml:3: routes: required: at least one route (name, sni, mode, upstreams)",
	}},
	{name: "route is not a mapping", yaml: "listen:\n  tls: [\":443\"]\nroutes:\n  - registry\n", want: []string{
		`snigate.yaml:4: routes[0]: want a mapping with keys name, sni, mode, upstreams, balance, proxy_protocol, health, serve, upstream_tls, max_dials, max_dials_per_client, dial_rate_per_client, http, got "registry"`,
	}},
	{name: "route keys required", yaml: "listen:\n  tls: [\":443\"]\nroutes:\n  - balance: leastconn\n", want: []string{
		`snigate.yaml:4: routes[0].name: required: a name such as "registry" (letters, digits, '-', '_', '.')`,
		`snigate.yaml:4: routes[0].sni: required: one or more names such as ["registry.example.com"]`,
		"snigate.yaml:4: routes[0].mode: required: bridge or splice",
		`snigate.yaml:4: routes[0].upstreams: required: one or more addresses such as ["10.1.0.10:443"]`,
	}},
	{name: "route unknown and duplicate keys", yaml: minimalSplice + "    helth: {}\n    mode: bridge\n", want: []string{
		`snigate.yaml:8: routes[0].helth: unknown key (did you mean "health"?); allowed here: name, sni, mode, upstreams, balance, proxy_protocol, health, serve, upstream_tls, max_dials, max_dials_per_client, dial_rate_per_client, http`,
		"snigate.yaml:9: routes[0].mode: duplicate key (first at line 6)",
	}},
	{name: "route enums", yaml: `listen:
  tls: [":443"]
routes:
  - name: a/b
    sni: [a.example.com]
    mode: bridg
    upstreams: ["10.0.0.1:443"]
    balance: random
    proxy_protocol: v3
`, want: []string{
		`snigate.yaml:4: routes[0].name: want a name such as "registry" (letters, digits, '-', '_', '.'), got "a/b"`,
		`snigate.yaml:6: routes[0].mode: want one of bridge, splice, got "bridg" (did you mean "bridge"?)`,
		`snigate.yaml:8: routes[0].balance: want one of roundrobin, leastconn, got "random"`,
		`snigate.yaml:9: routes[0].proxy_protocol: want one of "", v1, v2, got "v3" (did you mean "v1"?)`,
	}},
	{name: "upstreams", yaml: `listen:
  tls: [":443"]
routes:
  - name: r
    sni: [a.example.com]
    mode: splice
    upstreams: ["10.0.0.1", ":443", "10.0.0.2:443", "10.0.0.2:443", "reg:0"]
  - name: s
    sni: [b.example.com]
    mode: splice
    upstreams: []
`, want: []string{
		`snigate.yaml:7: routes[0].upstreams[0]: want host:port such as "10.1.0.10:443", got "10.0.0.1" (missing port in address)`,
		`snigate.yaml:7: routes[0].upstreams[1]: want host:port such as "10.1.0.10:443", got ":443" (missing host)`,
		`snigate.yaml:7: routes[0].upstreams[3]: "10.0.0.2:443" is listed twice (first at line 7)`,
		`snigate.yaml:7: routes[0].upstreams[4]: want host:port such as "10.1.0.10:443", got "reg:0" (the port must be a number from 1 to 65535)`,
		`snigate.yaml:11: routes[1].upstreams: required: one or more addresses such as ["10.1.0.10:443"]`,
	}},
	{name: "sni names", yaml: `listen:
  tls: [":443"]
routes:
  - name: r
    sni: ["*.*.example.com", "a b", "", "A.example.com", "a.example.com."]
    mode: splice
    upstreams: ["10.0.0.1:443"]
`, want: []string{
		`snigate.yaml:5: routes[0].sni[0]: want a name such as "registry.example.com" or "*.example.com", got "*.*.example.com": after "*.": label "*" has '*'; a wildcard is allowed only as the whole first label of a route name, as in "*.example.com"`,
		`snigate.yaml:5: routes[0].sni[1]: want a name such as "registry.example.com" or "*.example.com", got "a b": label "a b" has ' '; want letters, digits and '-'`,
		`snigate.yaml:5: routes[0].sni[2]: want a name such as "registry.example.com" or "*.example.com", got "": empty name`,
		`snigate.yaml:5: routes[0].sni[4]: "a.example.com" is listed twice (first at line 5)`,
	}},
	// Issue 13 item 2: these passed as SNI names, and the minter (and every
	// TLS client) then refused them.
	{name: "sni names the minter would refuse", yaml: `listen:
  tls: [":443"]
routes:
  - name: r
    sni: ["-reg.example.com", "1.2.3.4", "reg_1.example.com", "*.reg.example.com.", "10.1", "bücher.test"]
    mode: splice
    upstreams: ["10.0.0.1:443"]
`, want: []string{
		`snigate.yaml:5: routes[0].sni[0]: want a name such as "registry.example.com" or "*.example.com", got "-reg.example.com": label "-reg" starts or ends with a hyphen`,
		`snigate.yaml:5: routes[0].sni[1]: want a name such as "registry.example.com" or "*.example.com", got "1.2.3.4": an IP address; want a DNS name (a TLS server name or certificate name is never an address)`,
		`snigate.yaml:5: routes[0].sni[2]: want a name such as "registry.example.com" or "*.example.com", got "reg_1.example.com": label "reg_1" has '_'; want letters, digits and '-' (host names and certificate names have no underscore)`,
		`snigate.yaml:5: routes[0].sni[4]: want a name such as "registry.example.com" or "*.example.com", got "10.1": last label "1" is all digits, which reads as an IP address; want a DNS name`,
		`snigate.yaml:5: routes[0].sni[5]: want a name such as "registry.example.com" or "*.example.com", got "bücher.test": label "bücher" is not ASCII; write an international name in its xn-- (punycode) form`,
	}},
	{name: "duplicate route name and SNI", yaml: minimalSplice + `  - name: r
    sni: [b.example.com, A.Example.COM.]
    mode: splice
    upstreams: ["10.0.0.2:443"]
`, want: []string{
		`snigate.yaml:8: routes[1].name: duplicate route name "r" (first at line 4)`,
		`snigate.yaml:9: routes[1].sni[1]: "a.example.com" is already routed by route "r" (line 5); a name may belong to one route only`,
	}},
	{name: "default_route names no route", yaml: minimalSplice + "default_route: rr\n", want: []string{
		`snigate.yaml:8: default_route: no route named "rr" (did you mean "r"?); routes: r`,
	}},

	// Mode-specific keys.
	{name: "bridge keys in splice mode", yaml: minimalSplice + `    serve: {cert: serve.crt, key: serve.key}
    upstream_tls: {}
`, want: []string{
		"snigate.yaml:8: routes[0].serve: only allowed in bridge mode (this route is mode: splice); remove it or use mode: bridge",
		"snigate.yaml:9: routes[0].upstream_tls: only allowed in bridge mode (this route is mode: splice); remove it or use mode: bridge",
	}},
	{name: "proxy_protocol in bridge mode", yaml: minimalBridge + "    proxy_protocol: v2\n", want: []string{
		"snigate.yaml:10: routes[0].proxy_protocol: only allowed in splice mode (this route is mode: bridge); remove it or use mode: splice",
	}},
	{name: "bridge without serve and upstream_tls", yaml: `listen:
  tls: [":443"]
routes:
  - name: r
    sni: [a.example.com]
    mode: bridge
    upstreams: ["10.0.0.1:443"]
`, want: []string{
		"snigate.yaml:4: routes[0].serve: required in bridge mode: cert and key (the certificate clients see), or ca_cert and ca_key (a CA that mints one per SNI name)",
		"snigate.yaml:4: routes[0].upstream_tls: required in bridge mode: cert and key (the client certificate presented upstream), optionally ca and server_name; write upstream_tls: {} to present none",
	}},
	{name: "http keys validated with other checks", yaml: minimalSplice + `    health:
      path: /v2/
  - name: b
    sni: [b.example.com]
    mode: bridge
    upstreams: ["10.0.0.1:443"]
    serve: {cert: serve.crt, key: serve.key}
    upstream_tls: {}
    health: {expect_status: [600]}
`, want: []string{
		"snigate.yaml:16: routes[1].health.expect_status[0]: want an integer from 100 to 599, got 600",
	}},

	{name: "key exchanges", yaml: strings.Replace(minimalBridge, "ca: ca.crt}", "ca: ca.crt, key_exchanges: [x25519, kyber, x25519]}", 1), want: []string{
		`snigate.yaml:9: routes[0].upstream_tls.key_exchanges[1]: want one of x25519mlkem768, secp256r1mlkem768, secp384r1mlkem1024, x25519, secp256r1, secp384r1, secp521r1, got "kyber"`,
		`snigate.yaml:9: routes[0].upstream_tls.key_exchanges[2]: "x25519" is listed twice (first at line 9)`,
	}},

	{name: "serve min_version", yaml: strings.Replace(minimalBridge, "key: serve.key}", "key: serve.key, min_version: \"1.1\"}", 1), want: []string{
		`snigate.yaml:8: routes[0].serve.min_version: want "1.2" or "1.3" (older versions are not offered), got "1.1"`,
	}},
	{name: "serve cipher_suites", yaml: strings.Replace(minimalBridge, "key: serve.key}", "key: serve.key, cipher_suites: [TLS_RSA_WITH_AES_128_CBC_SHA, tls_ecdhe_ecdsa_with_aes_128_gcm_sha256]}", 1), want: []string{
		`snigate.yaml:8: routes[0].serve.cipher_suites[0]: want a secure TLS 1.2 cipher suite (` + strings.Join(secureSuiteNames(), ", ") + `), got "TLS_RSA_WITH_AES_128_CBC_SHA"`,
	}},
	{name: "max_dials below 1", yaml: minimalBridge + "    max_dials: 0\n    max_dials_per_client: many\n", want: []string{
		`snigate.yaml:10: routes[0].max_dials: want an integer of at least 1, got 0`,
		`snigate.yaml:11: routes[0].max_dials_per_client: want an integer of at least 1, got "many"`,
	}},
	{name: "dial_rate_per_client negative", yaml: minimalBridge + "    dial_rate_per_client: -1\n", want: []string{
		`snigate.yaml:10: routes[0].dial_rate_per_client: want an integer of at least 0, got -1`,
	}},
	{name: "dial_rate_per_client on a splice route", yaml: minimalSplice + "    dial_rate_per_client: 16\n", want: []string{
		`snigate.yaml:8: routes[0].dial_rate_per_client: only allowed in bridge mode (this route is mode: splice); remove it or use mode: bridge`,
	}},
	{name: "max_dials on a splice route", yaml: minimalSplice + "    max_dials: 16\n", want: []string{
		`snigate.yaml:8: routes[0].max_dials: only allowed in bridge mode (this route is mode: splice); remove it or use mode: bridge`,
	}},
	{name: "serve key exchanges", yaml: strings.Replace(minimalBridge, "key: serve.key}", "key: serve.key, key_exchanges: [X25519, mlkem]}", 1), want: []string{
		`snigate.yaml:8: routes[0].serve.key_exchanges[1]: want one of x25519mlkem768, secp256r1mlkem768, secp384r1mlkem1024, x25519, secp256r1, secp384r1, secp521r1, got "mlkem"`,
	}},

	// health:
	{name: "health values", yaml: minimalSplice + `    health:
      check: https
      interval: "3"
      timeout: 0
      fall: 0
      rise: -1
      intervall: 1s
`, want: []string{
		`snigate.yaml:9: routes[0].health.check: want one of tcp, tls, http, got "https" (did you mean "http"?)`,
		`snigate.yaml:10: routes[0].health.interval: want a duration such as "3s", got "3"`,
		`snigate.yaml:11: routes[0].health.timeout: want a duration greater than 0 such as "2s", got "0"`,
		"snigate.yaml:12: routes[0].health.fall: want an integer of at least 1, got 0",
		"snigate.yaml:13: routes[0].health.rise: want an integer of at least 1, got -1",
		`snigate.yaml:14: routes[0].health.intervall: unknown key (did you mean "interval"?); allowed here: check, path, expect_status, interval, timeout, fall, rise`,
	}},
	{name: "health http values", yaml: minimalSplice + `    health:
      check: http
      path: v2
      expect_status: [99, 600, x, 200, 200]
`, want: []string{
		`snigate.yaml:10: routes[0].health.path: want a path such as "/v2/", got "v2" (it must start with /)`,
		"snigate.yaml:11: routes[0].health.expect_status[0]: want an integer from 100 to 599, got 99",
		"snigate.yaml:11: routes[0].health.expect_status[1]: want an integer from 100 to 599, got 600",
		`snigate.yaml:11: routes[0].health.expect_status[2]: want an integer from 100 to 599, got "x"`,
		`snigate.yaml:11: routes[0].health.expect_status[4]: "200" is listed twice (first at line 11)`,
	}},
	{name: "health expect_status empty", yaml: minimalSplice + "    health: {check: http, expect_status: []}\n", want: []string{
		"snigate.yaml:8: routes[0].health.expect_status: required: one or more HTTP statuses such as [200, 401]",
	}},
	{name: "health timeout above interval", yaml: minimalSplice + "    health: {interval: 3s, timeout: 5s}\n", want: []string{
		`snigate.yaml:8: routes[0].health.timeout: want at most health.interval (3s), got "5s"`,
	}},
	{name: "health interval below default timeout", yaml: minimalSplice + "    health: {interval: 1s}\n", want: []string{
		`snigate.yaml:8: routes[0].health.interval: want at least health.timeout (2s, the default; set timeout too for a shorter interval), got "1s"`,
	}},

	// serve: and upstream_tls:
	{name: "serve both pairs", yaml: bridgeWith(`    serve:
      cert: serve.crt
      key: serve.key
      ca_cert: ca.crt
      ca_key: ca.key
    upstream_tls: {}
`), want: []string{
		"snigate.yaml:8: routes[0].serve: set either cert and key, or ca_cert and ca_key, not both",
	}},
	{name: "serve empty", yaml: bridgeWith("    serve: {}\n    upstream_tls: {}\n"), want: []string{
		"snigate.yaml:8: routes[0].serve: want cert and key (the certificate clients see), or ca_cert and ca_key (a CA that mints one per SNI name)",
	}},
	{name: "serve halves", yaml: bridgeWith("    serve: {cert: serve.crt}\n    upstream_tls: {key: client.key}\n") +
		"  - name: b\n    sni: [b.example.com]\n    mode: bridge\n    upstreams: [\"10.0.0.1:443\"]\n    serve: {ca_key: ca.key, crt: x}\n    upstream_tls: {}\n", want: []string{
		"snigate.yaml:8: routes[0].serve.key: required with routes[0].serve.cert: the file holding its private key",
		"snigate.yaml:9: routes[0].upstream_tls.cert: required with routes[0].upstream_tls.key: the certificate file",
		`snigate.yaml:14: routes[1].serve.crt: unknown key (did you mean "cert"?); allowed here: cert, key, ca_cert, ca_key, key_exchanges, min_version, cipher_suites, client_ca, client_names, client_crl`,
		"snigate.yaml:14: routes[1].serve.ca_cert: required with routes[1].serve.ca_key: the certificate file",
	}},
	{name: "missing files", yaml: bridgeWith(`    serve: {cert: missing.crt, key: /nonexistent/serve.key}
    upstream_tls: {cert: client.crt, key: client.key, ca: missing-ca.crt}
`), want: []string{
		"snigate.yaml:8: routes[0].serve.cert: cannot read missing.crt: no such file or directory",
		"snigate.yaml:8: routes[0].serve.key: cannot read /nonexistent/serve.key: no such file or directory",
		"snigate.yaml:9: routes[0].upstream_tls.ca: cannot read missing-ca.crt: no such file or directory",
	}},
	{name: "certificate does not match its key", yaml: bridgeWith(`    serve: {cert: serve.crt, key: other.key}
    upstream_tls: {cert: client.crt, key: serve.key}
`), want: []string{
		"snigate.yaml:8: routes[0].serve.cert: certificate does not match its key other.key (routes[0].serve.key)",
		"snigate.yaml:9: routes[0].upstream_tls.cert: certificate does not match its key serve.key (routes[0].upstream_tls.key)",
	}},
	{name: "cert and key swapped", yaml: bridgeWith(`    serve: {cert: serve.key, key: serve.crt}
    upstream_tls: {}
`), want: []string{
		"snigate.yaml:8: routes[0].serve.cert: no PEM certificate in serve.key (it holds a private key: are cert and key swapped?)",
		"snigate.yaml:8: routes[0].serve.key: no PEM private key in serve.crt (it holds a certificate: are cert and key swapped?)",
	}},
	{name: "not PEM", yaml: bridgeWith(`    serve: {cert: garbage.txt, key: serve.key}
    upstream_tls: {ca: garbage.txt}
`), want: []string{
		"snigate.yaml:8: routes[0].serve.cert: no PEM certificate in garbage.txt",
		"snigate.yaml:9: routes[0].upstream_tls.ca: no PEM certificate in garbage.txt",
	}},
	{name: "ca_cert is not a CA", yaml: bridgeWith(`    serve: {ca_cert: serve.crt, ca_key: serve.key}
    upstream_tls: {server_name: "*.example.com"}
`), want: []string{
		`snigate.yaml:8: routes[0].serve.ca_cert: serve.crt is not a CA certificate (basic constraints CA:TRUE missing); create one with "snigate ca init", or use cert and key`,
		`snigate.yaml:9: routes[0].upstream_tls.server_name: want a host name such as "registry.example.com" or an IP address, got "*.example.com": label "*" has '*'; a wildcard is allowed only as the whole first label of a route name, as in "*.example.com"`,
	}},
	{name: "expired certificates", yaml: bridgeWith(`    serve: {cert: expired.crt, key: expired.key}
    upstream_tls: {ca: expired.crt}
`), want: []string{
		"snigate.yaml:8: routes[0].serve.cert: certificate expired: NotAfter 2020-01-02T03:04:05Z",
		"snigate.yaml:9: routes[0].upstream_tls.ca: certificate expired: NotAfter 2020-01-02T03:04:05Z",
	}},
	{name: "a directory is not a certificate", yaml: bridgeWith(`    serve: {cert: a-directory, key: serve.key}
    upstream_tls: {}
`), want: []string{
		"snigate.yaml:8: routes[0].serve.cert: cannot read a-directory: not a regular file",
	}},

	// Everything at once: all errors are reported, in line order.
	{name: "reports all errors", yaml: `listen:
  tls: [":443", "443"]
  admin: "unix:relative"
timeouts:
  idle: 1d
max_connections: -5
routes:
  - name: registry
    sni: [registry.example.com]
    mode: bridge
    upstreams: ["10.1.0.10"]
    proxy_protocol: v1
    health: {check: tls, path: /v2/, interval: 3}
    serve: {cert: serve.crt, key: other.key}
    upstream_tls: {cert: missing.crt, key: client.key}
  - name: registry
    sni: [REGISTRY.example.com]
    mode: splice
    upstreams: ["10.1.0.11:443"]
    serve: {cert: serve.crt, key: serve.key}
default_route: mirror
extra: true
`, want: []string{
		`snigate.yaml:2: listen.tls[1]: want host:port such as ":443", got "443" (missing port in address)`,
		`snigate.yaml:3: listen.admin: want host:port such as "127.0.0.1:9090", or "unix:/run/snigate/admin.sock", got "unix:relative" (the socket path must be absolute)`,
		`snigate.yaml:5: timeouts.idle: want a duration such as "1h", got "1d"`,
		"snigate.yaml:6: max_connections: want an integer of at least 1, got -5",
		`snigate.yaml:11: routes[0].upstreams[0]: want host:port such as "10.1.0.10:443", got "10.1.0.10" (missing port in address)`,
		"snigate.yaml:12: routes[0].proxy_protocol: only allowed in splice mode (this route is mode: bridge); remove it or use mode: splice",
		`snigate.yaml:13: routes[0].health.interval: want a duration such as "3s", got "3"`,
		"snigate.yaml:14: routes[0].serve.cert: certificate does not match its key other.key (routes[0].serve.key)",
		"snigate.yaml:15: routes[0].upstream_tls.cert: cannot read missing.crt: no such file or directory",
		`snigate.yaml:16: routes[1].name: duplicate route name "registry" (first at line 8)`,
		`snigate.yaml:17: routes[1].sni[0]: "registry.example.com" is already routed by route "registry" (line 9); a name may belong to one route only`,
		"snigate.yaml:20: routes[1].serve: only allowed in bridge mode (this route is mode: splice); remove it or use mode: bridge",
		`snigate.yaml:21: default_route: no route named "mirror"; routes: registry`,
		"snigate.yaml:22: extra: unknown key; allowed here: listen, timeouts, max_connections, max_connections_per_client, max_handshakes, dns, default_route, routes, debug, log",
	}},
}

const routesSplice = `routes:
  - name: r
    sni: [a.example.com]
    mode: splice
    upstreams: ["10.0.0.1:443"]
`

const minimalBridge = `listen:
  tls: [":443"]
routes:
  - name: r
    sni: [a.example.com]
    mode: bridge
    upstreams: ["10.0.0.1:443"]
    serve: {cert: serve.crt, key: serve.key}
    upstream_tls: {cert: client.crt, key: client.key, ca: ca.crt}
`

// bridgeWith returns a bridge route ending in the given serve and
// upstream_tls lines (which start at line 8).
func bridgeWith(tlsLines string) string {
	return `listen:
  tls: [":443"]
routes:
  - name: r
    sni: [a.example.com]
    mode: bridge
    upstreams: ["10.0.0.1:443"]
` + tlsLines
}

const minimalSplice = `listen:
  tls: [":443"]
routes:
  - name: r
    sni: [a.example.com]
    mode: splice
    upstreams: ["10.0.0.1:443"]
`
