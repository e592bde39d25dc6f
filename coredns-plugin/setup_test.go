package snigate

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/pkg/fall"
)

// parseCases are Corefile blocks and the settings parsed from them.
var parseCases = []struct {
	name   string
	input  string
	keys   []string // server block keys; nil: none
	want   settings // compared on the fields set below
	fields []string
}{
	{
		name: "issue example without config",
		input: `snigate {
			answer 192.0.2.10 2001:db8::10
			ttl 30
			names registry.example.test *.mirror.example.test
			fallthrough
		}`,
		keys: []string{"registry.example.test.", "example.test."},
		want: settings{
			origins: []string{"registry.example.test.", "example.test."},
			answer:  []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")},
			ttl:     30 * time.Second, ttlSet: true,
			names:  []string{"registry.example.test", "*.mirror.example.test"},
			reload: DefaultReload,
			fall:   fall.Root,
		},
	},
	{
		name:  "zones on the directive line win over the server block",
		input: "snigate example.test {\nanswer 192.0.2.10\nnames a.example.test\n}",
		keys:  []string{"."},
		want: settings{
			origins: []string{"example.test."},
			answer:  []netip.Addr{netip.MustParseAddr("192.0.2.10")},
			names:   []string{"a.example.test"}, reload: DefaultReload, fall: fall.F{},
		},
	},
	{
		name:  "no server block keys: every zone",
		input: "snigate {\nanswer 192.0.2.10\nnames a.example.test\n}",
		want: settings{
			origins: []string{"."},
			answer:  []netip.Addr{netip.MustParseAddr("192.0.2.10")},
			names:   []string{"a.example.test"}, reload: DefaultReload,
		},
	},
	{
		name: "repeated answer and names accumulate; mapped IPv4 is unmapped; fallthrough zones",
		input: `snigate {
			answer ::ffff:192.0.2.10
			answer 2001:db8::10
			names a.example.test
			names b.example.test
			reload 0
			fallthrough in-addr.arpa example.test
		}`,
		want: settings{
			origins: []string{"."},
			answer:  []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")},
			names:   []string{"a.example.test", "b.example.test"},
			fall:    fall.F{Zones: []string{"in-addr.arpa.", "example.test."}},
		},
	},
	{
		name:  "answer_check defaults",
		input: "snigate {\nanswer 10.0.0.5 10.0.0.6\nnames a.example.test\nanswer_check\n}",
		want: settings{
			origins: []string{"."}, answer: []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("10.0.0.6")},
			names: []string{"a.example.test"}, reload: DefaultReload,
			check: &checkSettings{port: 443, interval: 2 * time.Second, timeout: time.Second, fall: 2, rise: 2},
		},
	},
	{
		name:  "answer_check settings",
		input: "snigate {\nanswer 10.0.0.5\nnames a.example.test\nanswer_check port 8443 interval 500ms timeout 250ms fall 3 rise 1\n}",
		want: settings{
			origins: []string{"."}, answer: []netip.Addr{netip.MustParseAddr("10.0.0.5")},
			names: []string{"a.example.test"}, reload: DefaultReload,
			check: &checkSettings{port: 8443, interval: 500 * time.Millisecond, timeout: 250 * time.Millisecond, fall: 3, rise: 1},
		},
	},
	{
		name:  "config alone: answer and names may come from the file",
		input: "snigate {\n config /etc/snigate/snigate.yaml\n reload 250ms\n}",
		want: settings{
			origins:    []string{"."},
			configPath: "/etc/snigate/snigate.yaml", configLine: 2,
			reload: 250 * time.Millisecond,
		},
	},
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", tc.input)
			c.ServerBlockKeys = tc.keys
			got, err := parse(c)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !sameSettings(got, tc.want) {
				t.Errorf("parse:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func sameSettings(a, b settings) bool {
	return slices.Equal(a.origins, b.origins) && slices.Equal(a.answer, b.answer) &&
		a.ttl == b.ttl && a.ttlSet == b.ttlSet && slices.Equal(a.names, b.names) &&
		a.configPath == b.configPath && (b.configLine == 0 || a.configLine == b.configLine) &&
		a.reload == b.reload && slices.Equal(a.fall.Zones, b.fall.Zones) &&
		(a.check == nil) == (b.check == nil) && (a.check == nil || *a.check == *b.check)
}

// parseErrorCases are Corefile blocks parse refuses and the error each gets.
var parseErrorCases = []struct {
	name  string
	input string
	want  string // the error must contain this, line included
}{
	{"bad answer", "snigate {\nanswer 192.0.2.10 not-an-ip\nnames a.example.test\n}",
		"Testfile:2 - Error during parsing: answer: want an IPv4 or IPv6 address such as 192.0.2.10 or 2001:db8::10, got 'not-an-ip'"},
	{"answer with zone", "snigate {\nnames a.example.test\n\nanswer fe80::1%eth0\n}",
		"Testfile:4 - Error during parsing: answer: want an IPv4 or IPv6 address"},
	{"answer without arguments", "snigate {\nanswer\nnames a.example.test\n}",
		"Testfile:2 - Error during parsing: Wrong argument count"},
	{"ttl not a number", "snigate {\nanswer 192.0.2.10\nnames a.example.test\nttl 30s\n}",
		"Testfile:4 - Error during parsing: ttl: want a number of seconds from 1 to 2147483647, such as 30, got '30s'"},
	{"ttl zero", "snigate {\nanswer 192.0.2.10\nnames a.example.test\nttl 0\n}",
		"Testfile:4 - Error during parsing: ttl: want a number of seconds from 1"},
	{"ttl too large", "snigate {\nanswer 192.0.2.10\nnames a.example.test\nttl 2147483648\n}",
		"Testfile:4 - Error during parsing: ttl: want a number of seconds"},
	{"ttl two arguments", "snigate {\nanswer 192.0.2.10\nnames a.example.test\nttl 1 2\n}",
		"Testfile:4 - Error during parsing: Wrong argument count"},
	{"bad name", "snigate {\nanswer 192.0.2.10\nnames a.example.test a.*.example.test\n}",
		`Testfile:3 - Error during parsing: names: "a.*.example.test": label "*" has '*'; a wildcard is allowed only as the whole first label of a route name, as in "*.example.com"`},
	{"name the gateway would refuse", "snigate {\nanswer 192.0.2.10\nnames -a.example.test\n}",
		`Testfile:3 - Error during parsing: names: "-a.example.test": label "-a" starts or ends with a hyphen`},
	{"names without arguments", "snigate {\nanswer 192.0.2.10\nnames\n}",
		"Testfile:3 - Error during parsing: Wrong argument count"},
	{"config twice", "snigate {\nanswer 192.0.2.10\nconfig a.yaml\nconfig b.yaml\n}",
		"Testfile:4 - Error during parsing: config: given twice"},
	{"config without file", "snigate {\nanswer 192.0.2.10\nconfig\n}",
		"Testfile:3 - Error during parsing: Wrong argument count"},
	{"bad reload", "snigate {\nconfig a.yaml\nreload 5\n}",
		"Testfile:3 - Error during parsing: reload: want a duration such as 5s (0 disables re-reading), got '5'"},
	{"negative reload", "snigate {\nconfig a.yaml\nreload -1s\n}",
		"Testfile:3 - Error during parsing: reload: want a duration"},
	{"unknown property", "snigate {\nanswer 192.0.2.10\nnames a.example.test\nanswers 192.0.2.11\n}",
		"Testfile:4 - Error during parsing: unknown property 'answers': want answer, ttl, names, config, reload, answer_check or fallthrough"},
	{"answer_check odd arguments", "snigate {\nanswer 192.0.2.10\nnames a.example.test\nanswer_check port\n}",
		"Testfile:4 - Error during parsing: answer_check: want pairs such as `port 443 interval 2s timeout 1s fall 2 rise 2`"},
	{"answer_check bad port", "snigate {\nanswer 192.0.2.10\nnames a.example.test\nanswer_check port 0\n}",
		"Testfile:4 - Error during parsing: answer_check: port: want a number from 1 to 65535, got '0'"},
	{"answer_check bad interval", "snigate {\nanswer 192.0.2.10\nnames a.example.test\nanswer_check interval 2\n}",
		"Testfile:4 - Error during parsing: answer_check: interval: want a duration such as 2s, got '2'"},
	{"answer_check unknown setting", "snigate {\nanswer 192.0.2.10\nnames a.example.test\nanswer_check path /v2/\n}",
		"Testfile:4 - Error during parsing: answer_check: unknown setting 'path': want port, interval, timeout, fall or rise"},
	{"answer_check timeout beyond interval", "snigate {\nanswer 192.0.2.10\nnames a.example.test\nanswer_check interval 1s timeout 2s\n}",
		"Testfile:4 - Error during parsing: answer_check: timeout 2s: want at most the interval (1s)"},
	{"answer_check twice", "snigate {\nanswer 192.0.2.10\nnames a.example.test\nanswer_check\nanswer_check\n}",
		"Testfile:5 - Error during parsing: answer_check: given twice"},
	{"no answer", "\nsnigate {\nnames a.example.test\n}",
		"Testfile:2 - Error during parsing: no `answer` addresses"},
	{"no names", "snigate {\nanswer 192.0.2.10\n}",
		"Testfile:1 - Error during parsing: no routed names"},
	{"twice in a server block", "snigate {\nanswer 192.0.2.10\nnames a.example.test\n}\nsnigate {\nanswer 192.0.2.10\nnames a.example.test\n}",
		"this plugin can only be used once per Server Block"},
}

func TestParseErrors(t *testing.T) {
	for _, tc := range parseErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(caddy.NewTestController("dns", tc.input))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parse error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestSetup runs the whole directive: parse, read the config file, add the
// handler to the server's chain. Errors from the file name the line of
// `config`.
func TestSetup(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.yaml", snigateYAML("pull.example.test"))
	bad := writeFile(t, dir, "bad.yaml", "listen:\n  tls: [\":8443\"]\nroutes: 7\n")
	tests := []struct {
		name    string
		input   string
		wantErr string // "" : setup succeeds and adds one handler
	}{
		{"names only", "snigate {\nanswer 192.0.2.10\nnames a.example.test\n}", ""},
		{"config supplies the names", "snigate {\nanswer 192.0.2.10\nconfig " + good + "\n}", ""},
		{"relative config is resolved against root", "snigate {\nanswer 192.0.2.10\nconfig good.yaml\n}", ""},
		{"missing config file", "snigate {\nanswer 192.0.2.10\n\nconfig " + filepath.Join(dir, "nope.yaml") + "\n}",
			"plugin/snigate: Testfile:4 - Error during parsing: config: stat " + filepath.Join(dir, "nope.yaml") + ": no such file or directory"},
		{"invalid config file", "snigate {\nanswer 192.0.2.10\nconfig " + bad + "\n}",
			"plugin/snigate: Testfile:3 - Error during parsing: config: " + bad + ":3: routes:"},
		{"config without dns.answer and no answer", "snigate {\nnames a.example.test\nconfig " + good + "\n}",
			"plugin/snigate: Testfile:3 - Error during parsing: config " + good + ": no `answer` addresses"},
		{"parse error is wrapped too", "snigate {\nanswer nope\n}",
			"plugin/snigate: Testfile:2 - Error during parsing: answer:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", tc.input)
			dnsserver.GetConfig(c).Root = dir
			err := setup(c)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("setup error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("setup: %v", err)
			}
			if n := len(dnsserver.GetConfig(c).Plugin); n != 1 {
				t.Errorf("setup added %d handlers to the chain, want 1", n)
			}
		})
	}
}

// snigateYAML is a valid snigate configuration with one splice route per
// name.
func snigateYAML(names ...string) string {
	var b strings.Builder
	b.WriteString("listen:\n  tls: [\"127.0.0.1:8443\"]\nroutes:\n")
	for i, n := range names {
		b.WriteString("  - name: route" + string(rune('a'+i)) + "\n")
		b.WriteString("    sni: [\"" + n + "\"]\n")
		b.WriteString("    mode: splice\n")
		b.WriteString("    upstreams: [\"127.0.0.1:9443\"]\n")
	}
	return b.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
