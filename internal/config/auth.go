package config

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/snigate/snigate/regauth"
)

// Auth is routes[].http.auth: the registry credentials the gateway
// answers the registry's challenges with, so that nodes need none. One
// of Anonymous, Username with PasswordFile, and DockerConfig is set. It
// holds file names only, never a secret: printing it is safe.
type Auth struct {
	Anonymous    bool   // anonymous Bearer tokens
	Username     string // with PasswordFile: HTTP Basic, or the Basic credentials sent to the token service
	PasswordFile string // absolute; its first line is the password, re-read on change
	DockerConfig string // absolute; a docker config.json, its entry for the route's host, re-read on change
}

// Source is a's credentials for the registry host, in regauth's plain
// values.
func (a *Auth) Source(host string) regauth.SourceConfig {
	return regauth.SourceConfig{Anonymous: a.Anonymous, Username: a.Username,
		PasswordFile: a.PasswordFile, DockerConfig: a.DockerConfig, Host: host}
}

// auth parses http.auth. hosts are the route's SNI names: the registry
// hosts the credentials must be for (a docker config needs an entry for
// each).
func (p *parser) auth(h fields, hosts []string) *Auth {
	n := h.get("auth")
	if n == nil {
		return nil
	}
	f := p.mapping(n, h.key("auth"), h.keyLine("auth"), "anonymous", "username", "password_file", "docker_config")
	a := &Auth{
		Anonymous:    p.boolAt(f, "anonymous", false),
		Username:     p.stringAt(f, "username", "the user name of the registry credentials"),
		PasswordFile: p.pathAt(f, "password_file"),
		DockerConfig: p.pathAt(f, "docker_config"),
	}
	if p.skipFiles {
		p.authKinds(f, a)
		return a
	}
	for _, host := range p.authHosts(f, a, hosts) {
		if err := regauth.CheckSource(a.Source(host)); err != nil {
			p.authError(f, a, host, err)
			break
		}
	}
	return a
}

// authHosts are the hosts a's credentials are checked for: each of the
// route's names for a docker config (its entries are per host; a
// wildcard is refused, it names no entry), else one (the others would
// read the same file).
func (p *parser) authHosts(f fields, a *Auth, hosts []string) []string {
	if a.DockerConfig == "" {
		return hosts[:min(len(hosts), 1)]
	}
	var exact []string
	for _, host := range hosts {
		if strings.HasPrefix(host, "*.") {
			p.errorf(f.keyLine("docker_config"), f.key("docker_config"), "a docker config's entries are per host, and the route's sni has the pattern %q: list the registry's names, or use username with password_file", host)
			continue
		}
		exact = append(exact, host)
	}
	return exact
}

// authKinds checks, without reading the files, that a names one kind of
// credentials.
func (p *parser) authKinds(f fields, a *Auth) {
	switch {
	case a.Anonymous && (a.DockerConfig != "" || a.Username != "" || a.PasswordFile != ""),
		a.DockerConfig != "" && (a.Username != "" || a.PasswordFile != ""):
		p.authError(f, a, "", regauth.ErrManySources)
	case !a.Anonymous && a.DockerConfig == "" && a.Username == "" && a.PasswordFile == "":
		p.authError(f, a, "", regauth.ErrNoSource)
	case (a.Username == "") != (a.PasswordFile == ""):
		p.authError(f, a, "", errors.New("username and password_file go together"))
	}
}

// authError reports err of regauth.CheckSource at the key it is about:
// the docker config or the password file when the error is about that
// file, else auth itself. The message names files, never a secret.
func (p *parser) authError(f fields, a *Auth, host string, err error) {
	key := ""
	switch {
	case errors.Is(err, regauth.ErrNoSource) || errors.Is(err, regauth.ErrManySources):
	case a.DockerConfig != "":
		key = "docker_config"
	case a.PasswordFile != "":
		key = "password_file"
	case a.Username != "":
		key = "username"
	}
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = fmt.Sprintf("cannot read %s: %s", pe.Path, pe.Err) // as for the other files; regauth's text names it twice
	}
	if host != "" && key == "docker_config" {
		msg += ": the route serves " + host + ", so the file needs its auths or credHelpers entry"
	}
	if key == "" {
		p.errorf(f.line, f.path, "%s", msg)
		return
	}
	p.errorf(f.keyLine(key), f.key(key), "%s", msg)
}

// authOnSplice reports http.auth on a splice route in regauth's words
// (besides http itself being refused there): the gateway cannot answer
// challenges on a connection it does not terminate.
func (p *parser) authOnSplice(route fields) {
	n := route.get("http")
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Value == "auth" {
			p.errorf(k.Line, route.key("http")+".auth", "%s", regauth.CheckRoute(false))
		}
	}
}
