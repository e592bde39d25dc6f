// Package doctor is `snigate doctor NAME`: run on a node, it follows the
// path a pull takes through the gateway and says, one line per step, what
// it found and, where a step fails, what to change. It needs none of the
// gateway's configuration: it reads what the node has (/etc/resolv.conf,
// /etc/hosts, systemd-resolved's drop-ins, containerd's certs.d) and asks
// the network.
//
// The steps, in order: resolver (which server the node asks, and whether a
// lookup can bypass the gateway), dns (A, AAAA, HTTPS for NAME), tcp, tls
// (chain and name against --ca or certs.d, ALPN), http (GET /v2/ and its
// WWW-Authenticate realm), realm (the token host goes through the gateway
// too) and redirect (given NAME/REPOSITORY:TAG, a blob's redirect host
// does too).
//
//	ok, err := doctor.Run(ctx, doctor.Config{Name: "registry.example.com"}, os.Stdout)
//	// ok: a pull would work; err: the check itself could not run
package doctor
