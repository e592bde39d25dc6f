package doctor

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// trust is how the node verifies NAME: the roots and the client
// certificate the runtime would use, and where they came from.
type trust struct {
	roots        *x509.CertPool
	source       string // for lines: "--ca FILE", "ca of .../hosts.toml", "system roots"
	client       []tls.Certificate
	clientSource string
}

// hostsFile is what hosts.toml says about the server (containerd's
// hostFileConfig, the fields doctor uses).
type hostsFile struct {
	Server string               `toml:"server"`
	CA     any                  `toml:"ca"`
	Client any                  `toml:"client"`
	Host   map[string]hostEntry `toml:"host"`
}

type hostEntry struct {
	CA     any `toml:"ca"`
	Client any `toml:"client"`
}

// loadTrust finds the CA and client certificate for NAME: --ca and
// --client-cert first, else containerd's certs.d (hosts.toml, or the
// docker-style *.crt and *.cert files it falls back to), else the system
// roots alone.
func (r *run) loadTrust() (trust, error) {
	t := trust{source: "system roots"}
	var caFiles []string
	var pairs [][2]string
	if dir := r.certsDir(); dir != "" {
		var err error
		if caFiles, pairs, err = certsDirFiles(dir, r.t); err != nil {
			return t, err
		}
		if len(caFiles) > 0 {
			t.source = strings.Join(caFiles, ", ")
		}
		if len(pairs) > 0 {
			t.clientSource = pairs[0][0]
		}
	}
	if r.cfg.CA != "" {
		caFiles, t.source = []string{r.cfg.CA}, "--ca "+r.cfg.CA
	}
	if r.cfg.ClientCert != "" {
		pairs, t.clientSource = [][2]string{{r.cfg.ClientCert, r.cfg.ClientKey}}, "--client-cert "+r.cfg.ClientCert
	}
	var err error
	if t.roots, err = rootsWith(caFiles); err != nil {
		return t, err
	}
	t.client, err = loadPairs(pairs)
	return t, err
}

// certsDir is NAME's directory in certs.d as containerd looks it up
// ("host_port_" or "host:port" for a port other than 443), "" if none.
func (r *run) certsDir() string {
	cands := []string{r.t.host}
	if r.t.port != DefaultPort {
		p := strconv.Itoa(r.t.port)
		cands = []string{r.t.host + "_" + p + "_", r.t.host + ":" + p}
	}
	for _, c := range cands {
		d := filepath.Join(r.cfg.CertsDir, c)
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return ""
}

// certsDirFiles reads dir/hosts.toml: the ca and client of the server
// when it is NAME, else of its [host."https://NAME"] table; without a
// hosts.toml, the *.crt and *.cert/*.key files, as containerd does.
func certsDirFiles(dir string, t target) (cas []string, pairs [][2]string, err error) {
	data, err := os.ReadFile(filepath.Join(dir, "hosts.toml"))
	if errors.Is(err, os.ErrNotExist) {
		return dockerStyle(dir)
	}
	if err != nil {
		return nil, nil, err
	}
	var f hostsFile
	if err := toml.Unmarshal(data, &f); err != nil {
		return nil, nil, fmt.Errorf("%s: %w: fix it (snigate node-config writes one)", filepath.Join(dir, "hosts.toml"), err)
	}
	ca, client := f.CA, f.Client
	if !sameHost(f.Server, t) || (ca == nil && client == nil) {
		for u, h := range f.Host {
			if sameHost(u, t) {
				ca, client = h.CA, h.Client
			}
		}
	}
	return paths(dir, ca), clientPairs(dir, client), nil
}

// sameHost reports whether a hosts.toml URL names the target registry.
func sameHost(u string, t target) bool {
	if !strings.Contains(u, "://") {
		u = "https://" + u
	}
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	port := p.Port()
	if port == "" {
		port = strconv.Itoa(DefaultPort)
	}
	return strings.EqualFold(p.Hostname(), t.host) && port == strconv.Itoa(t.port)
}

// paths turns a hosts.toml ca value (string or list) into file names,
// relative ones taken from dir as containerd does.
func paths(dir string, v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		out = append(out, abs(dir, x))
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, abs(dir, s))
			}
		}
	}
	return out
}

// clientPairs turns a hosts.toml client value into cert/key pairs.
func clientPairs(dir string, v any) [][2]string {
	var out [][2]string
	switch x := v.(type) {
	case string:
		out = append(out, [2]string{abs(dir, x), ""})
	case []any:
		for _, e := range x {
			if p := paths(dir, e); len(p) == 1 {
				out = append(out, [2]string{p[0], ""})
			} else if len(p) == 2 {
				out = append(out, [2]string{p[0], p[1]})
			}
		}
	}
	return out
}

func abs(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// dockerStyle is the docker certs.d layout: *.crt are CAs, X.cert with
// X.key a client pair.
func dockerStyle(dir string) ([]string, [][2]string, error) {
	cas, _ := filepath.Glob(filepath.Join(dir, "*.crt"))
	certs, _ := filepath.Glob(filepath.Join(dir, "*.cert"))
	var pairs [][2]string
	for _, c := range certs {
		key := strings.TrimSuffix(c, ".cert") + ".key"
		if _, err := os.Stat(key); err != nil {
			key = ""
		}
		pairs = append(pairs, [2]string{c, key})
	}
	return cas, pairs, nil
}

// rootsWith is the system roots plus the CA files, as containerd builds
// its pool.
func rootsWith(files []string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", f)
		}
	}
	return pool, nil
}

// loadPairs loads client pairs; a pair with no key file has its key in
// the certificate file (kubelet's kubelet-client-current.pem).
func loadPairs(pairs [][2]string) ([]tls.Certificate, error) {
	var out []tls.Certificate
	for _, p := range pairs {
		key := p[1]
		if key == "" {
			key = p[0]
		}
		c, err := tls.LoadX509KeyPair(p[0], key)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s: %w", p[0], err)
		}
		out = append(out, c)
	}
	return out, nil
}
