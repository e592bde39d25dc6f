package regauth

import (
	"context"
	"errors"
	"fmt"
)

// SourceConfig is a route's auth block in plain values, as the config
// file has it (routes[].http.auth). Exactly one of Anonymous,
// Username+PasswordFile and DockerConfig is set.
type SourceConfig struct {
	Anonymous    bool
	Username     string
	PasswordFile string
	DockerConfig string
	// Host is the upstream registry's host the credentials are for.
	Host string
}

// Errors of CheckRoute and CheckSource; internal/config wraps them with
// file, line and key.
var (
	ErrNotHTTPRoute = errors.New("auth needs an http route: a splice route passes the node's TLS through and cannot answer the registry's challenges")
	ErrNoSource     = errors.New("auth needs one of anonymous: true, username with password_file, or docker_config")
	ErrManySources  = errors.New("auth takes only one of anonymous, username with password_file, and docker_config")
)

// CheckRoute reports whether a route may carry auth: only an HTTP-aware
// route (bridge mode with http) sees the requests it would authorize.
func CheckRoute(httpAware bool) error {
	if !httpAware {
		return ErrNotHTTPRoute
	}
	return nil
}

// CheckSource checks c the way `snigate check` should: one kind of
// credentials; a username with a readable, non-empty password file; a
// docker config that parses and holds an auths entry, a credHelpers
// entry or a credsStore for c.Host. It runs no credential helper. Errors
// name the file, never a secret.
func CheckSource(c SourceConfig) error {
	n := 0
	for _, set := range []bool{c.Anonymous, c.Username != "" || c.PasswordFile != "", c.DockerConfig != ""} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return ErrNoSource
	case n > 1:
		return ErrManySources
	case c.Anonymous:
		return nil
	case c.DockerConfig != "":
		return checkDockerConfig(c.DockerConfig, c.Host)
	case c.Username == "":
		return errors.New("password_file needs a username")
	case c.PasswordFile == "":
		return errors.New("username needs a password_file")
	}
	_, err := NewPasswordFile(c.Username, c.PasswordFile).Credential(context.Background())
	return err
}

// checkDockerConfig parses path and looks up host without running a
// helper.
func checkDockerConfig(path, host string) error {
	if host == "" {
		return errors.New("docker_config: no upstream host to look up")
	}
	b, err := readBounded(path)
	if err != nil {
		return fmt.Errorf("docker config: %w", err)
	}
	cfg, err := parseDockerConfig(b)
	if err != nil {
		return fmt.Errorf("docker config: parse %s: %w", path, err)
	}
	if _, err := cfg.lookup(host); err != nil {
		return fmt.Errorf("docker config %s: %w", path, err)
	}
	return nil
}

// NewSource builds the Source c describes (after CheckSource).
func NewSource(c SourceConfig) (Source, error) {
	if err := CheckSource(c); err != nil {
		return nil, err
	}
	switch {
	case c.Anonymous:
		return Anonymous, nil
	case c.DockerConfig != "":
		return NewDockerConfig(c.DockerConfig, c.Host), nil
	}
	return NewPasswordFile(c.Username, c.PasswordFile), nil
}
