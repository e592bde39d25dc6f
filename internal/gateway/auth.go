package gateway

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/names"
	"github.com/snigate/snigate/oci"
	"github.com/snigate/snigate/regauth"
)

// MaxAuthHosts bounds the registry host names one auth route keeps a
// token cache for: its exact sni names take one each; a "*." pattern
// lets nodes name many, and those beyond the bound get 502 instead of
// growing the gateway's memory.
const MaxAuthHosts = 64

// authError is an http.auth the builders refuse; buildError reports it
// at routes[i].http.auth, or at the key of the file it is about.
type authError struct {
	key string // "", "password_file", "docker_config"
	err error
}

func (e *authError) Error() string { return e.err.Error() }
func (e *authError) Unwrap() error { return e.err }

// httpAuth returns the AuthFunc of a route with http.auth (nil without):
// a regauth.Transport per registry host the route's nodes address, over
// the route's upstream client, whose tokens come through the bridge's
// redirect transport. The credentials are checked here, for `check` and
// `run` alike (regauth.CheckSource: the password file readable, the
// docker config's entry for each of the route's names).
func (b *builder) httpAuth(rc *config.Route) (httpbridge.AuthFunc, error) {
	a := rc.HTTP.Auth
	if a == nil {
		return nil, nil
	}
	if err := regauth.CheckRoute(true); err != nil {
		return nil, &authError{err: err}
	}
	for _, name := range rc.SNI {
		if strings.HasPrefix(name, "*.") {
			continue // config refused a docker config here; the others read no entry per host
		}
		if err := regauth.CheckSource(authSource(a, name)); err != nil {
			return nil, authCheckError(a, err)
		}
	}
	methods := slices.Clone(rc.HTTP.Methods)
	return func(upstream, tokens http.RoundTripper) http.RoundTripper {
		return &authHosts{next: upstream, build: func(host string) (*regauth.Transport, error) {
			return regauth.New(upstream, regauth.Config{
				Route: rc.Name, Host: host, Source: newAuthSource(a, hostOnly(host)), TokenTransport: tokens,
				WriteAllowedFunc: func(r *http.Request) bool { return slices.Contains(methods, r.Method) },
				RepositoryFunc:   func(r *http.Request) string { return oci.RequestAPI(r).Repository },
				Metrics:          b.metrics.auth, Logger: b.log,
			})
		}}
	}, nil
}

// authSource is a's credentials for host in regauth's plain values.
func authSource(a *config.Auth, host string) regauth.SourceConfig {
	return regauth.SourceConfig{Anonymous: a.Anonymous, Username: a.Username,
		PasswordFile: a.PasswordFile, DockerConfig: a.DockerConfig, Host: host}
}

// newAuthSource is a's Source for host, unchecked (httpAuth checked it;
// a file that breaks later fails the requests that need it, and mends
// with the file).
func newAuthSource(a *config.Auth, host string) regauth.Source {
	switch {
	case a.DockerConfig != "":
		return regauth.NewDockerConfig(a.DockerConfig, host)
	case a.PasswordFile != "":
		return regauth.NewPasswordFile(a.Username, a.PasswordFile)
	}
	return regauth.Anonymous
}

// authCheckError is err of regauth.CheckSource at the key of the file it
// is about, in the words of the configuration's other file errors.
func authCheckError(a *config.Auth, err error) *authError {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = fmt.Errorf("cannot read %s: %w", pe.Path, pe.Err) // regauth's text names the file twice
	}
	switch {
	case a.DockerConfig != "":
		return &authError{key: "docker_config", err: err}
	case a.PasswordFile != "":
		return &authError{key: "password_file", err: err}
	}
	return &authError{err: err}
}

// authHosts sends each request through the regauth.Transport of the
// registry host it names (its Host, as the bridge's policy approved it:
// the connection's SNI name), made on first use, at most MaxAuthHosts.
type authHosts struct {
	next  http.RoundTripper
	build func(host string) (*regauth.Transport, error)

	mu    sync.Mutex
	hosts map[string]*regauth.Transport
}

func (a *authHosts) RoundTrip(r *http.Request) (*http.Response, error) {
	t, err := a.transport(names.Canonical(hostOnly(r.Host)) + portOf(r.Host))
	if err != nil {
		if r.Body != nil {
			_ = r.Body.Close() // a RoundTripper closes what it was given
		}
		return nil, err
	}
	return t.RoundTrip(r)
}

// transport is host's Transport.
func (a *authHosts) transport(host string) (*regauth.Transport, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t, ok := a.hosts[host]; ok {
		return t, nil
	}
	if len(a.hosts) >= MaxAuthHosts {
		return nil, fmt.Errorf("%w: the route's nodes named more than %d registry hosts (MaxAuthHosts); %s gets no token", oci.ErrTokenService, MaxAuthHosts, host)
	}
	t, err := a.build(host)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", oci.ErrTokenService, err)
	}
	if a.hosts == nil {
		a.hosts = make(map[string]*regauth.Transport)
	}
	a.hosts[host] = t
	return t, nil
}

// portOf is ":port" of hostport, "" without one.
func portOf(hostport string) string {
	if _, p, err := net.SplitHostPort(hostport); err == nil {
		return ":" + p
	}
	return ""
}
