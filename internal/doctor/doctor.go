package doctor

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Defaults of Config's zero fields: the places a node keeps its settings.
const (
	DefaultResolvConf  = "/etc/resolv.conf"
	DefaultHostsFile   = "/etc/hosts"
	DefaultCertsDir    = "/etc/containerd/certs.d"
	DefaultResolvedDir = "/etc/systemd" // resolved.conf and resolved.conf.d/*.conf
	DefaultTimeout     = 5 * time.Second
	DefaultPort        = 443
)

// Config says what to check and where the node's settings are.
type Config struct {
	// Name is the registry as an image reference starts: "host",
	// "host:port", or "host[:port]/repository:tag" (or "@sha256:...") to
	// also follow a blob's redirect.
	Name string
	// CA is a PEM file to verify the gateway's certificate with; "": the
	// ca of certs.d's hosts.toml for the host, else its *.crt files, else
	// the system roots.
	CA string
	// DNS is the one resolver to ask, ip or ip:port; "": the nameservers
	// of ResolvConf.
	DNS string
	// ClientCert and ClientKey are the node's certificate to present;
	// "": hosts.toml's client, else none. ClientKey "": in ClientCert.
	ClientCert, ClientKey string

	ResolvConf  string        // "": DefaultResolvConf
	HostsFile   string        // "": DefaultHostsFile
	CertsDir    string        // "": DefaultCertsDir
	ResolvedDir string        // "": DefaultResolvedDir
	Timeout     time.Duration // of each query, dial and request; 0: DefaultTimeout
}

// Status is the verdict of a step.
type Status string

// The statuses, as printed.
const (
	OK   Status = "ok"
	Fail Status = "FAIL"
	Warn Status = "warn"
)

// Result is one step's line.
type Result struct {
	Status Status
	Step   string // resolver dns tcp tls http realm manifest redirect
	Found  string // what the step saw
	Advice string // what to change; "" when nothing
}

// String is the printed line: status, step, found, and "-- fix: advice".
func (r Result) String() string {
	s := fmt.Sprintf("%-4s %-8s %s", r.Status, r.Step, r.Found)
	if r.Advice != "" {
		s += " -- fix: " + r.Advice
	}
	return s
}

// target is Name taken apart.
type target struct {
	host string // lower case, no port
	port int
	repo string // "" when Name is only a registry
	ref  string // tag or digest; "latest" when repo is set without one
}

func (t target) hostPort() string { return net.JoinHostPort(t.host, strconv.Itoa(t.port)) }

// registry is host or host:port as image references and certs.d name it.
func (t target) registry() string {
	if t.port == DefaultPort {
		return t.host
	}
	return t.hostPort()
}

// parseName splits "host[:port][/repo[:tag|@digest]]".
func parseName(name string) (target, error) {
	reg, rest, _ := strings.Cut(strings.TrimPrefix(name, "https://"), "/")
	t := target{port: DefaultPort}
	host, port, err := net.SplitHostPort(reg)
	if err != nil {
		host, port = reg, ""
	}
	t.host = strings.TrimSuffix(strings.ToLower(host), ".")
	if port != "" {
		if t.port, err = strconv.Atoi(port); err != nil || t.port < 1 || t.port > 65535 {
			return target{}, fmt.Errorf("NAME %q: bad port %q", name, port)
		}
	}
	if t.host == "" || strings.ContainsAny(t.host, " /@") {
		return target{}, fmt.Errorf("NAME %q: want a registry name such as registry.example.com, or registry.example.com/team/app:tag", name)
	}
	if rest != "" {
		t.repo, t.ref = splitRef(rest)
	}
	return dockerHub(t), nil
}

func splitRef(s string) (repo, ref string) {
	if r, d, ok := strings.Cut(s, "@"); ok {
		return r, d
	}
	if i := strings.LastIndexByte(s, ':'); i > strings.LastIndexByte(s, '/') {
		return s[:i], s[i+1:]
	}
	return s, "latest"
}

// run is one doctor session: the config, what earlier steps found, and
// where lines go.
type run struct {
	cfg    Config
	t      target
	out    io.Writer
	failed bool

	servers []string     // resolvers, ip:port, first is used
	addrs   []netip.Addr // NAME's addresses: the gateway
	addr    string       // the first address that accepted TCP, ip:port
	tls     *tls.Config  // for NAME, verified
	// noCert: the gateway asked for a client certificate and the node has
	// none; TLS 1.3 then refuses the connection only at its first use.
	noCert bool
	realm  *challenge   // from GET /v2/, nil when none
	httpc  *http.Client // made by client, once tls passed
}

func (r *run) report(res Result) {
	if res.Status == Fail {
		r.failed = true
	}
	fmt.Fprintln(r.out, res)
}

// Run checks cfg.Name, writing one line per step to out. ok is true when
// every step passed (warnings allowed): a pull would work. err is for a
// check that could not be made at all (a bad Name).
func Run(ctx context.Context, cfg Config, out io.Writer) (ok bool, err error) {
	t, err := parseName(cfg.Name)
	if err != nil {
		return false, err
	}
	r := &run{cfg: cfg.withDefaults(), t: t, out: out}
	defer r.close()
	steps := []func(context.Context) bool{r.resolver, r.dns, r.tcp, r.tlsStep, r.http, r.realmStep, r.redirect}
	for _, step := range steps {
		if !step(ctx) {
			break
		}
	}
	return !r.failed, nil
}

// close drops the HTTP client's idle connections.
func (r *run) close() {
	if r.httpc != nil {
		r.httpc.CloseIdleConnections()
	}
}

func (c Config) withDefaults() Config {
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	def(&c.ResolvConf, DefaultResolvConf)
	def(&c.HostsFile, DefaultHostsFile)
	def(&c.CertsDir, DefaultCertsDir)
	def(&c.ResolvedDir, DefaultResolvedDir)
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}
