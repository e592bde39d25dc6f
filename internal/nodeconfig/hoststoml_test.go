package nodeconfig

import (
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// hostsFile is what containerd reads from hosts.toml (its hostFileConfig).
type hostsFile struct {
	Server string         `toml:"server"`
	CA     any            `toml:"ca"`
	Client any            `toml:"client"`
	Host   map[string]any `toml:"host"`
}

func decode(t *testing.T, b []byte) hostsFile {
	t.Helper()
	var f hostsFile
	if err := toml.Unmarshal(b, &f); err != nil {
		t.Fatalf("hosts.toml does not parse: %v\n%s", err, b)
	}
	return f
}

var regHost = Host{Name: "registry.example.com", Route: "registry", CA: []byte("pem")}

// TestHostsTOMLNewHasHostTable: a new hosts.toml is one every containerd
// reads, 1.6 included: a [host."https://NAME"] table with capabilities,
// ca and client, the same settings at the top level.
func TestHostsTOMLNewHasHostTable(t *testing.T) {
	tests := []struct {
		name       string
		cfg        Config
		host       Host
		wantServer string
		wantCA     any
		wantClient any
	}{
		{name: "ca only", host: regHost, wantServer: "https://registry.example.com", wantCA: CAFile},
		{name: "port in server", host: Host{Name: "r.example", Port: 8443, CA: []byte("x")}, wantServer: "https://r.example:8443", wantCA: CAFile},
		{name: "no ca: system roots", host: Host{Name: "m.example"}, wantServer: "https://m.example"},
		{name: "node identity: kubelet's pem", host: Host{Name: "r.example", ClientCert: true},
			wantServer: "https://r.example", wantClient: DefaultClientCert},
		{name: "node identity: separate key", cfg: Config{ClientCert: "/n/c.pem", ClientKey: "/n/k.pem"}, host: Host{Name: "r.example", ClientCert: true},
			wantServer: "https://r.example", wantClient: []any{[]any{"/n/c.pem", "/n/k.pem"}}},
		{name: "client for all hosts", cfg: Config{ClientAll: true, ClientCert: "/n/c.pem"}, host: Host{Name: "r.example"},
			wantServer: "https://r.example", wantClient: "/n/c.pem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := hostsTOML(tt.cfg, tt.host)
			f := decode(t, b)
			if f.Server != tt.wantServer {
				t.Errorf("server = %q, want %q", f.Server, tt.wantServer)
			}
			if !equal(f.CA, tt.wantCA) || !equal(f.Client, tt.wantClient) {
				t.Errorf("ca = %#v, client = %#v; want %#v, %#v", f.CA, f.Client, tt.wantCA, tt.wantClient)
			}
			// containerd 1.6 refuses a file without a [host] table
			// ("invalid host tree"): the same settings are in one.
			h, _ := f.Host[tt.wantServer].(map[string]any)
			if h == nil || !equal(h["ca"], tt.wantCA) || !equal(h["client"], tt.wantClient) || !equal(h["capabilities"], []any{"pull", "resolve"}) {
				t.Errorf("[host.%q] = %#v, want ca %#v, client %#v, capabilities pull and resolve\n%s", tt.wantServer, h, tt.wantCA, tt.wantClient, b)
			}
			if again, err := mergeHostsTOML(b, tt.cfg, tt.host); err != nil || string(again) != string(b) {
				t.Errorf("merging the file with itself changed it (err %v):\n%s\n---\n%s", err, b, again)
			}
		})
	}
}

func equal(a, b any) bool { return strings.TrimSpace(toString(a)) == strings.TrimSpace(toString(b)) }

func toString(v any) string {
	b, _ := toml.Marshal(map[string]any{"v": v})
	return string(b)
}

// spegel is a hosts.toml as Spegel writes it: its mirror first, then the
// registry, with no certificate settings (the rewrite that broke pulls).
const spegel = `# Spegel mirror
server = "https://registry.example.com"
ca = "/old/ca.crt"
capabilities = ["pull", "resolve"]

[host."http://127.0.0.1:30020"]
  capabilities = ["pull", "resolve"]
  dial_timeout = "200ms"  # fast fail

[host."https://registry.example.com"]
  capabilities = ["pull", "resolve"]
  ca = [
    "/somewhere/else.crt",
  ]
  [host."https://registry.example.com".header]
    X-Tool = ["spegel"]

[host."https://second-mirror.example"]
  capabilities = ["pull"]
`

// mergeHostsCases are hosts.toml files found on a node and what the merge keeps and adds.
var mergeHostsCases = []struct {
	name      string
	old       string
	cfg       Config
	wantHosts []string // in file order
	keep      []string // text that must survive
	wantCAs   map[string]any
}{
	{name: "spegel mirrors kept in order, own host's ca replaced", old: spegel,
		wantHosts: []string{"http://127.0.0.1:30020", "https://registry.example.com", "https://second-mirror.example"},
		keep:      []string{"# Spegel mirror", `dial_timeout = "200ms"  # fast fail`, `X-Tool = ["spegel"]`, `capabilities = ["pull", "resolve"]`},
		wantCAs:   map[string]any{"https://registry.example.com": CAFile, "http://127.0.0.1:30020": nil}},
	{name: "empty file: own host table added", old: "", wantHosts: []string{"https://registry.example.com"},
		wantCAs: map[string]any{"https://registry.example.com": CAFile}},
	{name: "only a mirror, no server: own host table after it", old: "[host.\"https://mirror.local\"]\n  capabilities = [\"pull\"]\n  ca = \"mirror.crt\"\n",
		wantHosts: []string{"https://mirror.local", "https://registry.example.com"}, keep: []string{`ca = "mirror.crt"`},
		wantCAs: map[string]any{"https://mirror.local": "mirror.crt"}},
	{name: "client added to own host table", old: "[host.\"https://registry.example.com\"]\n  client = \"/old.pem\"\n",
		cfg: Config{ClientAll: true}, wantHosts: []string{"https://registry.example.com"}},
	{name: "no final newline", old: "server = \"https://elsewhere\"\n[host.\"https://m\"]\ncapabilities = [\"pull\"]",
		wantHosts: []string{"https://m", "https://registry.example.com"}},
	{name: "top level only (an older node-config): own host table added", old: "# snigate node-config: old\nserver = \"https://registry.example.com\"\nca = \"snigate-ca.crt\"\n",
		wantHosts: []string{"https://registry.example.com"}, wantCAs: map[string]any{"https://registry.example.com": CAFile}},
}

func TestMergeHostsTOML(t *testing.T) {
	for _, tt := range mergeHostsCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mergeHostsTOML([]byte(tt.old), tt.cfg, regHost)
			if err != nil {
				t.Fatal(err)
			}
			f := decode(t, got)
			if f.Server != "https://registry.example.com" || f.CA != CAFile {
				t.Errorf("server %q ca %#v, want snigate's\n%s", f.Server, f.CA, got)
			}
			if order := hostOrder(t, got); strings.Join(order, " ") != strings.Join(tt.wantHosts, " ") {
				t.Errorf("hosts in order %v, want %v\n%s", order, tt.wantHosts, got)
			}
			for _, k := range tt.keep {
				if !strings.Contains(string(got), k) {
					t.Errorf("lost %q\n%s", k, got)
				}
			}
			for url, want := range tt.wantCAs {
				h, _ := f.Host[url].(map[string]any)
				if !equal(h["ca"], want) {
					t.Errorf("host %s ca = %#v, want %#v\n%s", url, h["ca"], want, got)
				}
			}
			if tt.cfg.ClientAll {
				h, _ := f.Host["https://registry.example.com"].(map[string]any)
				if h["client"] != DefaultClientCert || f.Client != DefaultClientCert {
					t.Errorf("client top %#v host %#v, want %s\n%s", f.Client, h["client"], DefaultClientCert, got)
				}
			}
			again, err := mergeHostsTOML(got, tt.cfg, regHost)
			if err != nil || string(again) != string(got) {
				t.Errorf("a second merge changed the file (err %v):\n%s\n---\n%s", err, got, again)
			}
		})
	}
}

// hostOrder lists the [host."..."] tables in file order, as containerd's
// getSortedHosts does (the order it tries them in).
func hostOrder(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, `[host."`) && strings.HasSuffix(line, `"]`) {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(line, `[host."`), `"]`))
		}
	}
	return out
}

func TestMergeHostsTOMLRefusesBrokenFile(t *testing.T) {
	_, err := mergeHostsTOML([]byte("server = \"https://x\"\n[host.\"https://m\"\ncapabilities = 1\n"), Config{}, regHost)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v, want a parse error naming line 2", err)
	}
}
