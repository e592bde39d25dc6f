package e2e

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// binEnv names a prebuilt snigate binary to test instead of building one.
const binEnv = "SNIGATE_BIN"

// buildSnigate builds ./cmd/snigate of this module into dir.
func buildSnigate(dir string) (string, error) {
	if bin := os.Getenv(binEnv); bin != "" {
		return filepath.Abs(bin)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "snigate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/snigate")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/snigate (in %s): %w\n%s", root, err, out)
	}
	return bin, nil
}

// moduleRoot is the nearest directory above the working one with a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// gatewaySpec is what the snigate configuration file says.
type gatewaySpec struct {
	answer      string        // the bastion's address as the node sees it
	connect     bool          // listen.connect
	registryUps []string      // bridge route upstreams
	mirrorUp    string        // splice route upstream
	tokenUp     string        // splice route to the token-auth registry
	serveCA     string        // dir with ca.crt, ca.key from `snigate ca init`
	edge        keyPair       // the edge client certificate
	registryCA  string        // the registry's CA file
	nodes       *nodeIdentity // route nodes (node certificates required); nil: none
	auditLog    string        // the HTTP route's audit log file
	cacheDir    string        // route cache's http.cache.dir
	offline     bool          // route cache's http.cache.offline
	extra       string        // more routes, YAML appended after the others
	tags        string        // route cache's http.cache.tags; "": absent
	maxSize     string        // route cache's http.cache.max_size; "": 2GiB
	pin         []string      // route cache's http.cache.pin
}

// Health check timing of both routes: an upstream is down after
// healthFall failed checks healthInterval apart, up after healthRise.
const (
	healthInterval = time.Second
	healthFall     = 2
	healthRise     = 1
)

func (g gatewaySpec) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "listen:\n  tls: [\":443\"]\n  dns: \":53\"\n  admin: %q\n", adminAddr)
	if g.connect {
		fmt.Fprintf(&b, "  connect: \":%d\"\n", connectPort)
	}
	fmt.Fprintf(&b, `timeouts:
  drain: 2s
dns:
  answer: [%q]
  ttl: 5s
routes:
`, g.answer)
	g.bridgeRoute(&b, "registry", registryHost, "", "")
	g.spliceRoute(&b, "mirror", mirrorHost, g.mirrorUp)
	g.spliceRoute(&b, "tokenreg", tokenHost, g.tokenUp)
	tail := fmt.Sprintf("      server_name: %q\n    http:\n", registryHost)
	if g.nodes != nil {
		g.bridgeRoute(&b, "nodes", nodeHost, fmt.Sprintf(`      client_ca: %s
      client_names: ["system:node:*"]
      client_crl: %s
`, filepath.Join(g.nodes.caDir, "ca.crt"), g.nodes.crl), tail+fmt.Sprintf("      audit_log: %s\n", g.auditLog))
	}
	g.bridgeRoute(&b, "pull", httpHost, "", tail+fmt.Sprintf("      repositories: [%q]\n      audit_log: %s\n", httpAllowed, g.auditLog))
	g.bridgeRoute(&b, "cache", cacheHost, "", tail+fmt.Sprintf(`      audit_log: %s
      cache:
        dir: %s
        max_size: %s
        offline: %t
`, g.auditLog, g.cacheDir, cmp.Or(g.maxSize, "2GiB"), g.offline))
	if g.tags != "" {
		fmt.Fprintf(&b, "        tags: %s\n", g.tags)
	}
	if len(g.pin) > 0 {
		fmt.Fprintf(&b, "        pin: [%s]\n", `"`+strings.Join(g.pin, `", "`)+`"`)
	}
	b.WriteString(g.extra)
	return b.String()
}

// health is every route's health check timing.
func health() string {
	return fmt.Sprintf(`      interval: %s
      timeout: 900ms
      fall: %d
      rise: %d
`, healthInterval, healthFall, healthRise)
}

// bridgeRoute writes a bridge route to the registries (http check,
// serve.ca_* from ca init, the edge certificate): serveExtra goes at the
// end of serve:, tail after upstream_tls.ca.
func (g gatewaySpec) bridgeRoute(b *strings.Builder, name, host, serveExtra, tail string) {
	fmt.Fprintf(b, `  - name: %s
    sni: [%q]
    mode: bridge
    upstreams: [%s]
    health:
      check: http
      path: /v2/
      expect_status: [200, 401]
%s    serve:
      ca_cert: %s
      ca_key: %s
%s    upstream_tls:
      cert: %s
      key: %s
      ca: %s
%s`, name, host, quoteAll(g.registryUps), health(),
		filepath.Join(g.serveCA, "ca.crt"), filepath.Join(g.serveCA, "ca.key"), serveExtra,
		g.edge.certFile, g.edge.keyFile, g.registryCA, tail)
}

// spliceRoute writes a splice route to up with a tcp check.
func (g gatewaySpec) spliceRoute(b *strings.Builder, name, host, up string) {
	fmt.Fprintf(b, "  - name: %s\n    sni: [%q]\n    mode: splice\n    upstreams: [%q]\n    health:\n      check: tcp\n%s", name, host, up, health())
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// gateway is snigate running in the bastion namespace.
type gateway struct {
	bin    string
	ns     *netns
	config string
	log    string
	proc   *proc

	// connectSkip is why listen.connect is off ("" when it is on): the
	// output of `snigate check` rejecting it.
	connectSkip string
}

// snigate runs `snigate args...` inside the bastion namespace.
func (g *gateway) snigate(args ...string) result {
	return runCmd(g.ns.command(append([]string{g.bin}, args...)...))
}

// writeConfig writes spec, with listen.connect unless `snigate check`
// rejects that key (and only that key), and checks the result.
func (g *gateway) writeConfig(spec gatewaySpec) error {
	spec.connect = true
	if err := os.WriteFile(g.config, []byte(spec.yaml()), 0o644); err != nil {
		return err
	}
	r := g.snigate("check", "-c", g.config)
	if r.err == nil {
		return nil
	}
	if !strings.Contains(r.out, "listen.connect") {
		return fmt.Errorf("snigate check rejects the e2e configuration:\n%s\n--- %s\n%s", r, g.config, spec.yaml())
	}
	g.connectSkip = r.String()
	spec.connect = false
	if err := os.WriteFile(g.config, []byte(spec.yaml()), 0o644); err != nil {
		return err
	}
	if r := g.snigate("check", "-c", g.config); r.err != nil {
		return fmt.Errorf("snigate check rejects the e2e configuration:\n%s\n--- %s\n%s", r, g.config, spec.yaml())
	}
	return nil
}

// start runs the gateway and waits for /readyz.
func (g *gateway) start() error {
	p, err := startProc("snigate", g.log,
		g.ns.command(g.bin, "run", "-c", g.config, "--log-format", "json", "--log-level", "debug"))
	if err != nil {
		return err
	}
	g.proc = p
	err = poll(startTries, pollStep, func() error {
		if !p.running() {
			return fmt.Errorf("%w: snigate exited: %v", errGaveUp, p.err)
		}
		status, _, err := g.admin("/readyz")
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("/readyz: %d", status)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("snigate run: %w\n%s", err, p.tail(30))
	}
	return nil
}

// admin GETs path from the admin listener inside the bastion namespace.
func (g *gateway) admin(path string) (int, []byte, error) {
	return httpGetIn(g.ns, adminAddr, path)
}

// upstreamStatus is one element of GET /api/upstreams.
type upstreamStatus struct {
	Route     string `json:"route"`
	Upstream  string `json:"upstream"`
	State     string `json:"state"`
	Healthy   bool   `json:"healthy"`
	LastError string `json:"last_error"`
}

// upstreams reads GET /api/upstreams.
func (g *gateway) upstreams() ([]upstreamStatus, error) {
	status, body, err := g.admin("/api/upstreams")
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("/api/upstreams: %d %s", status, body)
	}
	var st []upstreamStatus
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("/api/upstreams: %w: %s", err, body)
	}
	return st, nil
}

// waitAllHealthy waits until every upstream of every route is healthy.
func (g *gateway) waitAllHealthy() error {
	return poll(startTries, pollStep, func() error {
		st, err := g.upstreams()
		if err != nil {
			return err
		}
		for _, s := range st {
			if !s.Healthy {
				return fmt.Errorf("%s %s is down: %s", s.Route, s.Upstream, s.LastError)
			}
		}
		return nil
	})
}

// ctlHealth runs `snigate ctl upstreams` in the bastion namespace and
// returns the HEALTH column ("up" or "down") of route's upstream.
func (g *gateway) ctlHealth(route, upstream string) (string, result, error) {
	r := g.snigate("ctl", "--admin", adminAddr, "upstreams")
	if r.err != nil {
		return "", r, fmt.Errorf("%s", r)
	}
	lines := strings.Split(r.out, "\n")
	col := strings.Index(lines[0], "HEALTH")
	if col < 0 {
		return "", r, fmt.Errorf("no HEALTH column:\n%s", r)
	}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == route && f[1] == upstream {
			return f[3], r, nil
		}
	}
	return "", r, fmt.Errorf("no row for %s %s:\n%s", route, upstream, r)
}

// logEvent is a line of the gateway's JSON log.
type logEvent struct {
	Msg      string `json:"msg"`
	Route    string `json:"route"`
	Upstream string `json:"upstream"`
	To       string `json:"to"`
	Listener string `json:"listener"`
}

// logEvents calls fn for each line of the gateway's JSON log.
func (g *gateway) logEvents(fn func(logEvent)) error {
	f, err := os.Open(g.log)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e logEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			fn(e)
		}
	}
	return sc.Err()
}

// connectionsOn counts the log lines about the listener on port.
func (g *gateway) connectionsOn(port int) (int, error) {
	n := 0
	suffix := fmt.Sprintf(":%d", port)
	err := g.logEvents(func(e logEvent) {
		if strings.HasSuffix(e.Listener, suffix) {
			n++
		}
	})
	return n, err
}

// healthChanges returns the "to" of every "upstream health changed" line
// logged for route's upstream, in order.
func (g *gateway) healthChanges(route, upstream string) ([]string, error) {
	var to []string
	err := g.logEvents(func(e logEvent) {
		if e.Msg == "upstream health changed" && e.Route == route && e.Upstream == upstream {
			to = append(to, e.To)
		}
	})
	return to, err
}

// writeFileAtomic replaces path with data through a temporary file in the
// same directory and a rename, so that a reader (the gateway's file
// watcher) sees the old file or the new one, never a half-written one.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
