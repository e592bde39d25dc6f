package config

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// Auth is routes[].http.auth: the registry credentials the gateway
// answers the registry's challenges with, so that nodes need none. One
// of Anonymous, Username with PasswordFile, and DockerConfig is set. It
// holds file names only, never a secret: printing it is safe.
//
// The parser checks the keys and that one kind is named; the files are
// checked where the credentials are built (internal/gateway, through
// regauth.CheckSource: `check` and `run` alike, at these keys), so that
// readers of the configuration that never use them (the CoreDNS plugin)
// do not link a docker config reader.
type Auth struct {
	Anonymous    bool   // anonymous Bearer tokens
	Username     string // with PasswordFile: HTTP Basic, or the Basic credentials sent to the token service
	PasswordFile string // absolute; its first line is the password, re-read on change
	DockerConfig string // absolute; a docker config.json, its entry for the route's host, re-read on change
}

// auth parses http.auth. sni are the route's names: a docker config's
// entries are per host, so they must be exact.
func (p *parser) auth(h fields, sni []string) *Auth {
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
	p.authKinds(f, a)
	if a.DockerConfig != "" {
		for _, host := range sni {
			if strings.HasPrefix(host, "*.") {
				p.errorf(f.keyLine("docker_config"), f.key("docker_config"), "a docker config's entries are per host, and the route's sni has the pattern %q: list the registry's names, or use username with password_file", host)
				break
			}
		}
	}
	return a
}

// authKinds checks that a names exactly one kind of credentials.
func (p *parser) authKinds(f fields, a *Auth) {
	user := a.Username != "" || a.PasswordFile != ""
	n := 0
	for _, set := range []bool{a.Anonymous, user, a.DockerConfig != ""} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		p.errorf(f.line, f.path, "auth needs one of anonymous: true, username with password_file, or docker_config")
	case n > 1:
		p.errorf(f.line, f.path, "auth takes only one of anonymous, username with password_file, and docker_config")
	case user && a.Username == "":
		p.errorf(f.keyLine("password_file"), f.key("password_file"), "password_file needs a username")
	case user && a.PasswordFile == "":
		p.errorf(f.keyLine("username"), f.key("username"), "username needs a password_file: the file whose first line is the password")
	}
}

// authOnSplice reports http.auth on a splice route (besides http itself
// being refused there): the gateway cannot answer challenges on a
// connection it does not terminate.
func (p *parser) authOnSplice(route fields) {
	n := route.get("http")
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Value == "auth" {
			p.errorf(k.Line, route.key("http")+".auth", "auth needs an http route: a splice route passes the node's TLS through and cannot answer the registry's challenges")
		}
	}
}
