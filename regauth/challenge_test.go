package regauth

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestParseChallenges(t *testing.T) {
	type c = Challenge
	tests := []struct {
		name string
		in   string
		want []Challenge
	}{
		{name: "docker hub", in: `Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/alpine:pull"`,
			want: []c{{"bearer", map[string]string{"realm": "https://auth.docker.io/token", "service": "registry.docker.io", "scope": "repository:library/alpine:pull"}}}},
		{name: "basic", in: `Basic realm="Registry Realm"`, want: []c{{"basic", map[string]string{"realm": "Registry Realm"}}}},
		{name: "scheme and names case-insensitive", in: `BEARER Realm="r",SERVICE=s`, want: []c{{"bearer", map[string]string{"realm": "r", "service": "s"}}}},
		{name: "token values and spaces", in: `Bearer  realm = r , service=svc`, want: []c{{"bearer", map[string]string{"realm": "r", "service": "svc"}}}},
		{name: "unquoted URL cut at its first non-token byte", in: `Bearer realm=https://a/t,service=svc`, want: []c{{"bearer", map[string]string{"realm": "https", "service": "svc"}}}},
		{name: "two challenges", in: `Bearer realm="https://a/t",scope="repository:x:pull,push", Basic realm="b"`,
			want: []c{{"bearer", map[string]string{"realm": "https://a/t", "scope": "repository:x:pull,push"}}, {"basic", map[string]string{"realm": "b"}}}},
		{name: "escapes in quoted string", in: `Bearer realm="https://a/t?x=\"q\"",error="invalid_token",error_description="a \\ b"`,
			want: []c{{"bearer", map[string]string{"realm": `https://a/t?x="q"`, "error": "invalid_token", "error_description": `a \ b`}}}},
		{name: "comma inside quotes", in: `Bearer scope="repository:a:pull,push",realm="r"`, want: []c{{"bearer", map[string]string{"scope": "repository:a:pull,push", "realm": "r"}}}},
		{name: "token68 then basic", in: `Negotiate abc==, Basic realm="b"`, want: []c{{"negotiate", map[string]string{}}, {"basic", map[string]string{"realm": "b"}}}},
		{name: "scheme alone", in: `Bearer`, want: []c{{"bearer", map[string]string{}}}},
		{name: "first param wins", in: `Bearer realm="a",realm="b"`, want: []c{{"bearer", map[string]string{"realm": "a"}}}},
		{name: "unterminated quote", in: `Bearer realm="https://a/t`, want: []c{{"bearer", map[string]string{}}}},
		{name: "garbage skipped to the next comma", in: `@@@ junk, Basic realm="b"`, want: []c{{"basic", map[string]string{"realm": "b"}}}},
		{name: "empty", in: ``, want: nil},
		{name: "only commas", in: ` , ,, `, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseChallenges(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseChallenges(%q)\n got %#v\nwant %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestChallengesOfSeveralHeaders(t *testing.T) {
	h := http.Header{}
	h.Add("WWW-Authenticate", `Basic realm="b"`)
	h.Add("WWW-Authenticate", `Bearer realm="https://a/t",service="s"`)
	got, ok := pick(ChallengesOf(h))
	if !ok || got.Scheme != "bearer" || got.Params["service"] != "s" {
		t.Fatalf("pick = %#v, %v; want the Bearer challenge", got, ok)
	}
}

func TestPick(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		scheme string
		ok     bool
	}{
		{name: "bearer before basic", in: `Basic realm="b", Bearer realm="r"`, scheme: "bearer", ok: true},
		{name: "bearer without realm loses to basic", in: `Bearer service="s", Basic realm="b"`, scheme: "basic", ok: true},
		{name: "neither", in: `Negotiate abc`, ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := pick(ParseChallenges(tt.in))
			if ok != tt.ok || got.Scheme != tt.scheme {
				t.Errorf("pick(%q) = %q, %v; want %q, %v", tt.in, got.Scheme, ok, tt.scheme, tt.ok)
			}
		})
	}
}

func TestParseChallengesBounds(t *testing.T) {
	many := strings.Repeat(`Basic realm="x", `, 100)
	if got := len(ParseChallenges(many)); got != maxChallenges {
		t.Errorf("%d challenges kept, want %d", got, maxChallenges)
	}
	var b strings.Builder
	b.WriteString("Bearer ")
	for i := range 100 {
		b.WriteString("p")
		b.WriteString(strings.Repeat("x", i))
		b.WriteString(`="v",`)
	}
	cs := ParseChallenges(b.String())
	if len(cs) == 0 || len(cs[0].Params) > maxParams {
		t.Errorf("params kept: %d, want at most %d", len(cs[0].Params), maxParams)
	}
}

// FuzzParseChallenges: WWW-Authenticate comes from the registry, which
// the gateway does not trust. Properties: no panic, the bounds hold,
// schemes and param names are lower-case tokens, a value is no longer
// than the input.
func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{
		`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/alpine:pull"`,
		`Basic realm="Registry Realm"`,
		`Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:a/b:pull", Basic realm="x"`,
		`Bearer realm="a\"b",error="insufficient_scope"`,
		`Negotiate abc==`, `Bearer realm="unterminated`, `,,, ,`, `Bearer realm=`, `"`, `\`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		cs := ParseChallenges(in)
		if len(cs) > maxChallenges {
			t.Fatalf("%d challenges", len(cs))
		}
		for _, c := range cs {
			if c.Scheme == "" || c.Scheme != strings.ToLower(c.Scheme) || len(c.Params) > maxParams {
				t.Fatalf("bad challenge %#v", c)
			}
			for k, v := range c.Params {
				if k != strings.ToLower(k) || len(v) > len(in) {
					t.Fatalf("bad param %q=%q", k, v)
				}
				for i := range len(k) {
					if !isTokenChar(k[i]) {
						t.Fatalf("param name %q is not a token", k)
					}
				}
			}
		}
	})
}
