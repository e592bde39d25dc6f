package doctor

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/nodeconfig"
	"github.com/snigate/snigate/internal/testnet"
)

// doctorCases are a node's faults, each set up in the world, and what doctor says of them.
var doctorCases = []struct {
	name     string
	setup    func(t *testing.T, w *world, c *Config)
	wantOK   bool
	failStep string   // the step that fails ("": none)
	want     []string // text in the output
}{
	{name: "working node, image given", wantOK: true,
		setup: func(t *testing.T, w *world, c *Config) { c.Name = w.image() },
		want: []string{"ok   resolver", "ok   dns", "ok   tcp", "ok   tls", "ALPN h2", "ok   http", "token realm https://auth.test",
			"ok   realm    auth.test resolves to 127.0.0.1 (the gateway)", "ok   manifest team/app:1 read; its blob sha256:c0ffee", "ok   redirect blobs.test resolves to 127.0.0.1 (the gateway)"}},
	{name: "working node, registry only: redirect not checked", wantOK: true,
		want: []string{"warn redirect not checked"}},
	{name: "CA missing", failStep: "tls",
		setup: func(t *testing.T, w *world, c *Config) { c.CA = "" },
		want:  []string{`issued by "snigate test CA" is not trusted by system roots`, "fix: trust the gateway's CA: install certs.d/registry.test:"}},
	{name: "CA from node-config's certs.d", wantOK: true,
		setup: func(t *testing.T, w *world, c *Config) {
			c.CA = ""
			writeNodeConfig(t, w, c.CertsDir)
		},
		want: []string{"/certs.d/registry.test_", "_/snigate-ca.crt"}},
	{name: "name unknown to the resolver", failStep: "dns",
		setup: func(t *testing.T, w *world, c *Config) { w.set(regName, "") },
		want:  []string{"NXDOMAIN from 127.0.0.1", "fix: the server does not know registry.test: point the node's resolver at the gateway"}},
	{name: "name in the hosts file", wantOK: true,
		setup: func(t *testing.T, w *world, c *Config) {
			w.set(regName, "")
			must(t, os.WriteFile(c.HostsFile, []byte("127.0.0.1 registry.test\n"), 0o644))
		},
		want: []string{"DNS is not asked for it", "registry.test: 127.0.0.1 (from /"}},
	{name: "realm host not routed", failStep: "realm",
		setup: func(t *testing.T, w *world, c *Config) { w.set(authName, "") },
		want:  []string{"auth.test does not resolve", "fix: send auth.test through the gateway too: add it to a route's sni"}},
	{name: "blob redirect host not routed", failStep: "redirect",
		setup: func(t *testing.T, w *world, c *Config) { c.Name = w.image(); w.set(blobsName, "") },
		want:  []string{"blobs.test does not resolve", "fix: send blobs.test through the gateway too"}},
	{name: "manifest refused by the gateway's allow-list", failStep: "manifest",
		setup: func(t *testing.T, w *world, c *Config) {
			c.Name = w.image()
			w.manifestStatus(http.StatusForbidden, `{"errors":[{"code":"DENIED","message":"repository team/app is not allowed on route registry"}]}`)
		},
		want: []string{"FAIL manifest GET https://registry.test:", "403 Forbidden (DENIED: repository team/app is not allowed on route registry)",
			"fix: reading team/app is refused: on the gateway, add it to the route's http.repositories"}},
	{name: "manifest refused by the gateway's signature policy", failStep: "manifest",
		setup: func(t *testing.T, w *world, c *Config) {
			c.Name = w.image()
			w.manifestStatus(http.StatusForbidden, `{"errors":[{"code":"DENIED","message":"image team/app@sha256:`+strings.Repeat("ab", 32)+
				` refused by the signature policy of route \"registry\": unsigned: no cosign signature (tag sha256-`+strings.Repeat("ab", 32)+`.sig or an OCI referrer) exists for it"}]}`)
		},
		want: []string{"403 Forbidden (DENIED: image team/app@sha256:abab", "refused by the signature policy of route \"registry\": unsigned: no cosign signature",
			"fix: the gateway's signature policy refused team/app:1 (the reason above): sign the image with a key listed in the route's http.verify.cosign.keys"}},
	{name: "manifest of an unknown image", failStep: "manifest",
		setup: func(t *testing.T, w *world, c *Config) {
			c.Name = w.image()
			w.manifestStatus(http.StatusNotFound, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`)
		},
		want: []string{"404 Not Found (MANIFEST_UNKNOWN: manifest unknown)", "fix: the registry has no team/app:1: check the repository and the tag"}},
	{name: "gateway down", failStep: "tcp",
		setup: func(t *testing.T, w *world, c *Config) { c.Name = regName + ":" + portOf(testnet.ClosedAddr(t)) },
		want:  []string{"connection refused", "fix: nothing listens on 127.0.0.1 port"}},
	{name: "no healthy upstream", failStep: "http",
		setup: func(t *testing.T, w *world, c *Config) {
			w.mu.Lock()
			w.handler = http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { rw.WriteHeader(http.StatusServiceUnavailable) })
			w.mu.Unlock()
		},
		want: []string{"GET /v2/: 503", "fix: the gateway reaches no registry for registry.test: on the gateway, run snigate ctl upstreams"}},
	{name: "resolver does not answer", failStep: "dns",
		setup: func(t *testing.T, w *world, c *Config) { c.DNS = testnet.ClosedAddr(t); c.Timeout = 1e9 },
		want:  []string{"FAIL dns", "fix: the resolver does not answer"}},
}

func TestDoctor(t *testing.T) {
	for _, tt := range doctorCases {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			cfg := w.config(w.name())
			if tt.setup != nil {
				tt.setup(t, w, &cfg)
			}
			ok, lines, out := doctor(t, cfg)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if tt.failStep != "" && !strings.HasPrefix(lines[tt.failStep], "FAIL") {
				t.Errorf("step %s did not fail", tt.failStep)
			}
			if n := strings.Count(out, "FAIL"); n > 1 || (n == 1) != (tt.failStep != "") {
				t.Errorf("%d FAIL lines, want one at %q", n, tt.failStep)
			}
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q", s)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

func portOf(hp string) string { return hp[strings.LastIndexByte(hp, ':')+1:] }

// writeNodeConfig writes what `snigate node-config` writes for the
// registry into certsDir.
func writeNodeConfig(t *testing.T, w *world, certsDir string) {
	t.Helper()
	files, err := nodeconfig.Build(nodeconfig.Config{Hosts: []nodeconfig.Host{{Name: regName, Port: w.port, Route: "registry", CA: w.ca.PEM}}}, nil)
	must(t, err)
	must(t, nodeconfig.Write(filepath.Dir(certsDir), files))
}

// TestResolverDisagreement: a second nameserver that answers NAME
// differently is a way around the gateway (the resolver library moves on
// to it when the first times out).
func TestResolverDisagreement(t *testing.T) {
	gw, other, unknown := newWorld(t), newWorld(t), newWorld(t)
	other.set(regName, "10.99.0.1")
	unknown.set(regName, "")
	tests := []struct {
		name    string
		servers []string
		want    Status
		text    string
	}{
		{name: "agree", servers: []string{gw.dns, gw.dns}, want: OK, text: "all answer registry.test alike"},
		{name: "second answers another address", servers: []string{gw.dns, other.dns}, want: Fail, text: "answers 10.99.0.1"},
		{name: "second does not know the name", servers: []string{gw.dns, unknown.dns}, want: Fail, text: "NXDOMAIN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &run{cfg: gw.config(regName).withDefaults(), t: target{host: regName, port: DefaultPort}, servers: tt.servers}
			res := r.agreement(context.Background(), "x")
			if res.Status != tt.want || !strings.Contains(res.Found, tt.text) {
				t.Fatalf("got %s", res)
			}
			if tt.want == Fail && !strings.Contains(res.Advice, "bypasses the gateway") {
				t.Fatalf("advice %q", res.Advice)
			}
		})
	}
}

// manifestStatus makes the registry answer every manifest with status
// and body (an OCI error), as a registry or the gateway's policy does.
func (w *world) manifestStatus(status int, body string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	next := w.handler
	w.handler = http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.URL.Path, "/manifests/") && req.Header.Get("Authorization") != "" {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(status)
			rw.Write([]byte(body))
			return
		}
		next.ServeHTTP(rw, req)
	})
}
