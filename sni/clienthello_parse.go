package sni

import "fmt"

// parse fills hello from a complete ClientHello message (header included),
// with the checks crypto/tls applies to the fields snigate uses.
func (hello *ClientHello) parse(msg []byte) error {
	hello.Len = len(msg)
	s := byteString(msg[4:])
	var random, sid, suites, comp []byte
	ok := s.u16(&hello.Version) && s.bytes(&random, 32) &&
		s.vec8(&sid) && len(sid) <= 32 &&
		s.vec16(&suites) && len(suites)%2 == 0 && len(suites) > 0 &&
		s.vec8(&comp) && len(comp) > 0
	if !ok {
		return fmt.Errorf("%w: truncated or invalid fixed fields", errBadHello)
	}
	copy(hello.Random[:], random)
	hello.SessionIDLen, hello.CipherSuites = len(sid), len(suites)/2
	for i := 0; i < len(suites); i += 2 {
		hello.suites.add(uint16(suites[i])<<8 | uint16(suites[i+1]))
	}
	if len(s) == 0 {
		return nil // no extensions (pre-TLS 1.2 style)
	}
	var exts []byte
	if !s.vec16(&exts) || len(s) != 0 {
		return fmt.Errorf("%w: invalid extensions block", errBadHello)
	}
	return hello.parseExtensions(byteString(exts))
}

// parseExtensions reads the extensions snigate uses and rejects a repeated
// extension, as crypto/tls does.
func (hello *ClientHello) parseExtensions(s byteString) error {
	var seen extSet
	for len(s) > 0 {
		var typ uint16
		var data []byte
		if !s.u16(&typ) || !s.vec16(&data) {
			return fmt.Errorf("%w: truncated extension", errBadHello)
		}
		if !seen.add(typ) {
			return fmt.Errorf("%w: extension %d appears twice", errBadHello, typ)
		}
		if err := hello.parseExtension(typ, byteString(data)); err != nil {
			return err
		}
	}
	return nil
}

func (hello *ClientHello) parseExtension(typ uint16, d byteString) error {
	var ok bool
	var what string
	switch typ {
	case extServerName:
		ok, what = hello.parseServerName(d), "server_name"
	case extALPN:
		ok, what = hello.parseALPN(d), "application_layer_protocol_negotiation"
	case extSupportedVersions:
		ok, what = hello.parseSupportedVersions(d), "supported_versions"
	case extKeyShare:
		hello.shares.parse(d) // crypto/tls judges a malformed one
		return nil
	default:
		return nil
	}
	if !ok {
		return fmt.Errorf("%w: invalid %s extension", errBadHello, what)
	}
	return nil
}

// parseServerName reads RFC 6066 section 3: a list of (type, name); only
// one host_name is allowed. A name ending in a dot, which RFC 6066 forbids
// and crypto/tls refuses, is kept as sent: the router matches it (the
// trailing dot is ignored, as for DNS), a splice route passes it through
// and a bridge route refuses it with a clear reason (session.go).
func (hello *ClientHello) parseServerName(d byteString) bool {
	var list []byte
	if !d.vec16(&list) || len(list) == 0 || len(d) != 0 {
		return false
	}
	l := byteString(list)
	for len(l) > 0 {
		var typ uint8
		var name []byte
		if !l.u8(&typ) || !l.vec16(&name) || len(name) == 0 {
			return false
		}
		if typ != sniHostName {
			continue
		}
		if hello.ServerName != "" {
			return false
		}
		hello.ServerName = string(name)
	}
	return true
}

// parseALPN reads RFC 7301 section 3.1: a non-empty list of non-empty
// protocol names. The names share one string allocation.
func (hello *ClientHello) parseALPN(d byteString) bool {
	var list []byte
	if !d.vec16(&list) || len(list) == 0 || len(d) != 0 {
		return false
	}
	n := 0
	for l := byteString(list); len(l) > 0; n++ {
		var p []byte
		if !l.vec8(&p) || len(p) == 0 {
			return false
		}
	}
	all := string(list)
	hello.ALPN = make([]string, 0, n)
	for i := 0; i < len(all); {
		pl := int(all[i])
		hello.ALPN = append(hello.ALPN, all[i+1:i+1+pl])
		i += 1 + pl
	}
	return true
}

// parseSupportedVersions reads RFC 8446 section 4.2.1.
func (hello *ClientHello) parseSupportedVersions(d byteString) bool {
	var list []byte
	if !d.vec8(&list) || len(list) == 0 || len(list)%2 != 0 || len(d) != 0 {
		return false
	}
	if n := len(list) / 2; n <= len(hello.versions) {
		hello.SupportedVersions = hello.versions[:0:n]
	} else {
		hello.SupportedVersions = make([]uint16, 0, n)
	}
	for i := 0; i < len(list); i += 2 {
		hello.SupportedVersions = append(hello.SupportedVersions, uint16(list[i])<<8|uint16(list[i+1]))
	}
	return true
}

// extSet remembers the extension types seen, to reject repeats. Real
// hellos carry under 30 extensions; a linear scan of a small array beats a
// map and does not allocate.
type extSet struct {
	small [32]uint16
	n     int
	more  map[uint16]struct{}
}

func (e *extSet) add(t uint16) bool {
	for _, v := range e.small[:e.n] {
		if v == t {
			return false
		}
	}
	if _, dup := e.more[t]; dup {
		return false
	}
	if e.n < len(e.small) {
		e.small[e.n] = t
		e.n++
		return true
	}
	if e.more == nil {
		e.more = make(map[uint16]struct{})
	}
	e.more[t] = struct{}{}
	return true
}

// byteString is a minimal cryptobyte.String: each read advances the string
// and reports false, consuming nothing useful, when too few bytes remain.
type byteString []byte

func (s *byteString) bytes(out *[]byte, n int) bool {
	if n < 0 || len(*s) < n {
		return false
	}
	*out, *s = (*s)[:n], (*s)[n:]
	return true
}

func (s *byteString) u8(v *uint8) bool {
	var b []byte
	if !s.bytes(&b, 1) {
		return false
	}
	*v = b[0]
	return true
}

func (s *byteString) u16(v *uint16) bool {
	var b []byte
	if !s.bytes(&b, 2) {
		return false
	}
	*v = uint16(b[0])<<8 | uint16(b[1])
	return true
}

func (s *byteString) vec8(out *[]byte) bool {
	var n uint8
	return s.u8(&n) && s.bytes(out, int(n))
}

func (s *byteString) vec16(out *[]byte) bool {
	var n uint16
	return s.u16(&n) && s.bytes(out, int(n))
}
