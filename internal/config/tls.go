package config

import (
	"net/netip"

	"github.com/snigate/snigate/names"
)

// serve parses a bridge route's serve: section: exactly one of cert+key
// and ca_cert+ca_key, and the files they name.
func (p *parser) serve(route fields, mode string) Serve {
	if mode == ModeSplice {
		if !p.spliceClientAuth(route) {
			p.notInMode(route, "serve", mode, ModeBridge)
		}
		return Serve{}
	}
	if route.get("serve") == nil {
		if mode == ModeBridge {
			p.errorf(route.keyLine("serve"), route.key("serve"),
				"required in bridge mode: cert and key (the certificate clients see), or ca_cert and ca_key (a CA that mints one per SNI name)")
		}
		return Serve{}
	}
	f := p.mapping(route.get("serve"), route.key("serve"), route.keyLine("serve"), "cert", "key", "ca_cert", "ca_key", "key_exchanges",
		"min_version", "cipher_suites", "client_ca", "client_names", "client_crl")
	s := Serve{Cert: p.pathAt(f, "cert"), Key: p.pathAt(f, "key"), CACert: p.pathAt(f, "ca_cert"), CAKey: p.pathAt(f, "ca_key"),
		KeyExchanges: p.keyExchanges(f), MinVersion: p.minVersion(f), CipherSuites: p.cipherSuites(f)}
	p.clientAuth(f, &s)
	leaf, ca := s.Cert != "" || s.Key != "", s.CACert != "" || s.CAKey != ""
	switch {
	case leaf && ca:
		p.errorf(route.keyLine("serve"), f.path, "set either cert and key, or ca_cert and ca_key, not both")
	case !leaf && !ca:
		if !p.hasErrorAt(f.path) {
			p.errorf(route.keyLine("serve"), f.path, "want cert and key (the certificate clients see), or ca_cert and ca_key (a CA that mints one per SNI name)")
		}
	case leaf && p.pair(f, "cert", s.Cert, "key", s.Key):
		p.checkKeyPair(f, "cert", "key", s.Cert, s.Key)
	case ca && p.pair(f, "ca_cert", s.CACert, "ca_key", s.CAKey):
		p.checkCA(f, s.CACert, s.CAKey)
	}
	return s
}

// pair checks that the certificate a and its key b are both set (values va
// and vb), reporting the missing half.
func (p *parser) pair(f fields, a, va, b, vb string) bool {
	switch {
	case va != "" && vb == "" && !p.hasErrorAt(f.key(b)):
		p.errorf(f.keyLine(a), f.key(b), "required with %s: the file holding its private key", f.key(a))
	case vb != "" && va == "" && !p.hasErrorAt(f.key(a)):
		p.errorf(f.keyLine(b), f.key(a), "required with %s: the certificate file", f.key(b))
	}
	return va != "" && vb != ""
}

// upstreamTLS parses a bridge route's upstream_tls: section. It is required
// in bridge mode, so that forgetting the client certificate is an error;
// write "upstream_tls: {}" to present none.
func (p *parser) upstreamTLS(route fields, mode string) UpstreamTLS {
	if mode == ModeSplice && p.notInMode(route, "upstream_tls", mode, ModeBridge) {
		return UpstreamTLS{}
	}
	if _, present := route.keys["upstream_tls"]; !present {
		if mode == ModeBridge {
			p.errorf(route.line, route.key("upstream_tls"),
				"required in bridge mode: cert and key (the client certificate presented upstream), optionally ca and server_name; write upstream_tls: {} to present none")
		}
		return UpstreamTLS{}
	}
	f := p.mapping(route.get("upstream_tls"), route.key("upstream_tls"), route.keyLine("upstream_tls"), "cert", "key", "ca", "server_name", "key_exchanges")
	u := UpstreamTLS{Cert: p.pathAt(f, "cert"), Key: p.pathAt(f, "key"), CA: p.pathAt(f, "ca")}
	if p.pair(f, "cert", u.Cert, "key", u.Key) {
		p.checkKeyPair(f, "cert", "key", u.Cert, u.Key)
	}
	if u.CA != "" {
		p.checkCABundle(f, "ca", u.CA)
	}
	u.ServerName = p.serverName(f)
	u.KeyExchanges = p.keyExchanges(f)
	return u
}

// serverName returns upstream_tls.server_name: a host name
// (names.CheckHost) in canonical form, or an IP address.
func (p *parser) serverName(f fields) string {
	const want = `a host name such as "registry.example.com"`
	s := p.stringAt(f, "server_name", want)
	if s == "" {
		return ""
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return s
	}
	if err := names.CheckHost(s); err != nil {
		p.errorf(f.keyLine("server_name"), f.key("server_name"), "want %s or an IP address, got %q: %v", want, s, err)
		return ""
	}
	return names.Canonical(s)
}
