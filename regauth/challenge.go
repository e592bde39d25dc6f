package regauth

import (
	"net/http"
	"strings"
)

// Bounds on what ParseChallenges keeps of a hostile header.
const (
	maxChallenges = 16
	maxParams     = 16
)

// Challenge is one challenge of a WWW-Authenticate header (RFC 7235):
// its scheme, lower-cased ("bearer", "basic"), and its auth-params with
// lower-cased names (realm, service, scope, error). A token68 form
// ("Negotiate abc==") has no params.
type Challenge struct {
	Scheme string
	Params map[string]string
}

// ChallengesOf parses every WWW-Authenticate header of h.
func ChallengesOf(h http.Header) []Challenge {
	var out []Challenge
	for _, v := range h.Values("WWW-Authenticate") {
		out = append(out, ParseChallenges(v)...)
		if len(out) >= maxChallenges {
			return out[:maxChallenges]
		}
	}
	return out
}

// ParseChallenges parses one WWW-Authenticate value, which may hold
// several challenges ("Bearer realm=\"a\",scope=\"b\", Basic realm=\"c\"").
// The value is untrusted: what does not parse is skipped up to the next
// comma, and at most 16 challenges of 16 params each are kept.
func ParseChallenges(v string) []Challenge {
	s := scanner{s: v}
	var out []Challenge
	for len(out) < maxChallenges {
		s.skipListSep()
		if s.done() {
			break
		}
		scheme := s.token()
		if scheme == "" {
			s.skipPast(',')
			continue
		}
		c := Challenge{Scheme: strings.ToLower(scheme), Params: map[string]string{}}
		s.params(c.Params)
		out = append(out, c)
	}
	return out
}

// scanner walks a header value.
type scanner struct {
	s string
	i int
}

func (s *scanner) done() bool { return s.i >= len(s.s) }

func (s *scanner) peek() byte {
	if s.done() {
		return 0
	}
	return s.s[s.i]
}

func (s *scanner) skipSpace() {
	for !s.done() && (s.s[s.i] == ' ' || s.s[s.i] == '\t') {
		s.i++
	}
}

func (s *scanner) skipListSep() {
	for !s.done() && (s.s[s.i] == ' ' || s.s[s.i] == '\t' || s.s[s.i] == ',') {
		s.i++
	}
}

// skipPast moves past the next c, or to the end.
func (s *scanner) skipPast(c byte) {
	if j := strings.IndexByte(s.s[s.i:], c); j >= 0 {
		s.i += j + 1
		return
	}
	s.i = len(s.s)
}

func (s *scanner) token() string {
	start := s.i
	for !s.done() && isTokenChar(s.s[s.i]) {
		s.i++
	}
	return s.s[start:s.i]
}

// params reads the auth-params after a scheme into p, stopping before the
// next challenge's scheme.
func (s *scanner) params(p map[string]string) {
	for n := 0; ; n++ {
		s.skipSpace()
		start := s.i
		name := s.token()
		s.skipSpace()
		if name == "" || s.peek() != '=' || n >= maxParams {
			s.i = start
			if name == "" && !s.done() && s.peek() != ',' {
				s.skipPast(',') // garbage, or a token68
			}
			return
		}
		s.i++ // '='
		s.skipSpace()
		val, ok := s.value()
		if !ok {
			s.skipPast(',') // a token68 ("abc==") or garbage
			return
		}
		if k := strings.ToLower(name); p[k] == "" {
			p[k] = val
		}
		s.skipSpace()
		if s.done() {
			return
		}
		s.skipPast(',') // the separator, or garbage up to it
	}
}

// value reads a token or a quoted-string (with \ escapes).
func (s *scanner) value() (string, bool) {
	if s.peek() != '"' {
		v := s.token()
		return v, v != ""
	}
	s.i++
	var b strings.Builder
	for !s.done() {
		c := s.s[s.i]
		s.i++
		switch {
		case c == '"':
			return b.String(), true
		case c == '\\' && !s.done():
			b.WriteByte(s.s[s.i])
			s.i++
		default:
			b.WriteByte(c)
		}
	}
	return "", false // unterminated
}

// isTokenChar reports whether c is an RFC 7230 tchar.
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// pick returns the challenge the gateway answers: Bearer with a realm
// before Basic; ok is false when there is neither.
func pick(cs []Challenge) (Challenge, bool) {
	var basic *Challenge
	for i := range cs {
		switch cs[i].Scheme {
		case "bearer":
			if cs[i].Params["realm"] != "" {
				return cs[i], true
			}
		case "basic":
			if basic == nil {
				basic = &cs[i]
			}
		}
	}
	if basic != nil {
		return *basic, true
	}
	return Challenge{}, false
}
