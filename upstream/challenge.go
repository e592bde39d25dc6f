package upstream

import (
	"net/http"
	"strings"
)

// challenge is one authentication challenge of a WWW-Authenticate header
// (RFC 9110 section 11.6.1).
type challenge struct {
	Scheme  string            // lower case, e.g. "bearer"
	Token68 string            // the token68 form, as in "Negotiate abc=="
	Params  map[string]string // auth-params, names lower case, values unquoted
}

// bearerRealm returns the realm of the first Bearer challenge in h's
// WWW-Authenticate headers, or "".
func bearerRealm(h http.Header) string {
	for _, v := range h.Values("WWW-Authenticate") {
		for _, c := range parseChallenges(v) {
			if c.Scheme == "bearer" && c.Params["realm"] != "" {
				return c.Params["realm"]
			}
		}
	}
	return ""
}

// parseChallenges parses a WWW-Authenticate value: a comma-separated list
// of challenges, each a scheme followed by a token68 or by comma-separated
// name=value parameters whose values may be quoted strings (with commas and
// backslash escapes inside). It is lenient, as clients are: a missing comma
// between parameters is tolerated, and parsing stops at the first byte that
// cannot start a challenge, returning what came before.
func parseChallenges(v string) []challenge {
	var out []challenge
	p := challengeParser{s: v}
	for {
		p.skip(" \t,")
		scheme := p.token()
		if scheme == "" {
			return out
		}
		c := challenge{Scheme: strings.ToLower(scheme), Params: map[string]string{}}
		p.skip(" \t")
		if t68, ok := p.token68(); ok {
			c.Token68 = t68
		} else {
			p.params(c.Params)
		}
		out = append(out, c)
	}
}

// challengeParser walks a header value; i never exceeds len(s).
type challengeParser struct {
	s string
	i int
}

func (p *challengeParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *challengeParser) skip(set string) {
	for p.i < len(p.s) && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

// token consumes an RFC 9110 token.
func (p *challengeParser) token() string {
	start := p.i
	for p.i < len(p.s) && isTokenChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// token68 consumes a token68 when one stands here: token68 characters,
// then any "=" padding, then the end or a comma. A name=value parameter
// does not match, since a value follows its "=".
func (p *challengeParser) token68() (string, bool) {
	start := p.i
	j := p.i
	for j < len(p.s) && isToken68Char(p.s[j]) {
		j++
	}
	if j == start {
		return "", false
	}
	for j < len(p.s) && p.s[j] == '=' {
		j++
	}
	k := j
	for k < len(p.s) && (p.s[k] == ' ' || p.s[k] == '\t') {
		k++
	}
	if k < len(p.s) && p.s[k] != ',' {
		return "", false
	}
	p.i = j
	return p.s[start:j], true
}

// params consumes name=value pairs into m. It stops, leaving the input at
// the name, when a token is not followed by "=": that token is the scheme
// of the next challenge.
func (p *challengeParser) params(m map[string]string) {
	for {
		p.skip(" \t,")
		start := p.i
		name := p.token()
		p.skip(" \t")
		if name == "" || p.peek() != '=' {
			p.i = start
			return
		}
		p.i++ // '='
		p.skip(" \t")
		val := p.value()
		if _, dup := m[strings.ToLower(name)]; !dup {
			m[strings.ToLower(name)] = val
		}
	}
}

// value consumes a quoted string (unquoted and unescaped; an unterminated
// one runs to the end) or a token.
func (p *challengeParser) value() string {
	if p.peek() != '"' {
		return p.token()
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '"':
			return b.String()
		case c == '\\' && p.i < len(p.s):
			b.WriteByte(p.s[p.i])
			p.i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken68Char(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}
