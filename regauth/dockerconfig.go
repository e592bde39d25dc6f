package regauth

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
)

// DefaultHelperCacheTTL is how long a credential helper's answer is used
// before the helper runs again (a change of the config file runs it again
// at once). It keeps registries that ask for Basic on every request from
// running a process per request.
const DefaultHelperCacheTTL = time.Minute

// dockerHubHosts are the names Docker Hub is reached by; docker config
// files key its credentials by authn.DefaultAuthKey
// ("https://index.docker.io/v1/").
var dockerHubHosts = []string{"registry-1.docker.io", "index.docker.io", "docker.io"}

// dockerConfigFile is what the gateway reads of a docker config.json.
// authn.AuthConfig decodes an auths entry the way docker does (the "auth"
// field is base64 of user:password).
type dockerConfigFile struct {
	Auths       map[string]authn.AuthConfig `json:"auths"`
	CredHelpers map[string]string           `json:"credHelpers"`
	CredsStore  string                      `json:"credsStore"`
}

func parseDockerConfig(b []byte) (*dockerConfigFile, error) {
	var f dockerConfigFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// DockerConfig is the Source of a docker config.json's credentials for one
// registry host: its auths entry (auth, username/password, identitytoken,
// registrytoken), or the credential helper credHelpers or credsStore name
// for it. The file is stat'ed on each use and parsed again when it
// changed.
type DockerConfig struct {
	host string
	file watchedFile[*dockerConfigFile]
	// HelperTimeout bounds a credential helper's run; zero means
	// DefaultHelperTimeout.
	HelperTimeout time.Duration
	// HelperCacheTTL is how long a helper's answer is reused; zero means
	// DefaultHelperCacheTTL.
	HelperCacheTTL time.Duration

	mu     sync.Mutex
	cached *helperAnswer
}

type helperAnswer struct {
	cfg   *dockerConfigFile // the parse the answer belongs to
	cred  Credential
	until time.Time
}

var _ Source = (*DockerConfig)(nil)

// NewDockerConfig returns the Source of the credentials path holds for
// host (the upstream's registry host, e.g. "ghcr.io" or
// "registry-1.docker.io"). It reads nothing yet.
func NewDockerConfig(path, host string) *DockerConfig {
	return &DockerConfig{host: host, file: watchedFile[*dockerConfigFile]{path: path, parse: parseDockerConfig}}
}

// Credential implements Source.
func (d *DockerConfig) Credential(ctx context.Context) (Credential, error) {
	cfg, err := d.file.load()
	if err != nil {
		return Credential{}, fmt.Errorf("docker config: %w", err)
	}
	e, err := cfg.lookup(d.host)
	if err != nil {
		return Credential{}, fmt.Errorf("docker config %s: %w", d.file.path, err)
	}
	if e.helper == "" {
		return e.cred, nil
	}
	return d.fromHelper(ctx, cfg, e)
}

// fromHelper runs e's helper, or reuses its answer for the same parse of
// the file within HelperCacheTTL.
func (d *DockerConfig) fromHelper(ctx context.Context, cfg *dockerConfigFile, e entry) (Credential, error) {
	now := time.Now()
	d.mu.Lock()
	c := d.cached
	d.mu.Unlock()
	if c != nil && c.cfg == cfg && now.Before(c.until) {
		return c.cred, nil
	}
	cred, err := runHelper(ctx, e.helper, e.serverURL, orDefault(d.HelperTimeout, DefaultHelperTimeout))
	if err != nil {
		return Credential{}, fmt.Errorf("docker config %s: %w", d.file.path, err)
	}
	d.mu.Lock()
	d.cached = &helperAnswer{cfg: cfg, cred: cred, until: now.Add(orDefault(d.HelperCacheTTL, DefaultHelperCacheTTL))}
	d.mu.Unlock()
	return cred, nil
}

// entry is what a config holds for a host: credentials, or a helper to
// ask with serverURL.
type entry struct {
	cred      Credential
	helper    string
	serverURL string
}

// lookup finds host's entry the way docker does: credHelpers for the
// host, then an auths entry with credentials, then credsStore.
func (f *dockerConfigFile) lookup(host string) (entry, error) {
	keys := configKeys(host)
	for _, k := range keys {
		if h := f.helperFor(k); h != "" {
			return entry{helper: h, serverURL: keys[0]}, nil
		}
	}
	for _, k := range keys {
		if a, ok := f.authFor(k); ok {
			return entry{cred: fromAuthConfig(a)}, nil
		}
	}
	if f.CredsStore != "" {
		return entry{helper: f.CredsStore, serverURL: keys[0]}, nil
	}
	return entry{}, fmt.Errorf("%w %s: no auths entry, credHelpers or credsStore for it", ErrNoCredential, host)
}

func (f *dockerConfigFile) helperFor(key string) string {
	for k, h := range f.CredHelpers {
		if h != "" && configHost(k) == key {
			return h
		}
	}
	return ""
}

func (f *dockerConfigFile) authFor(key string) (authn.AuthConfig, bool) {
	for k, a := range f.Auths {
		if configHost(k) == key && (a.Username != "" && a.Password != "" || a.IdentityToken != "" || a.RegistryToken != "") {
			return a, true
		}
	}
	return authn.AuthConfig{}, false
}

// configKeys are the names host's credentials may be filed under, most
// specific first: for Docker Hub its historical key, for others the host.
func configKeys(host string) []string {
	h := strings.ToLower(host)
	for _, d := range dockerHubHosts {
		if h == d {
			return append([]string{authn.DefaultAuthKey}, dockerHubHosts...)
		}
	}
	return []string{h}
}

// configHost turns a config key ("https://ghcr.io", "ghcr.io/v2/",
// "https://index.docker.io/v1/") into the host it names, as docker's
// ConvertToHostname does; Docker Hub's key stays whole.
func configHost(key string) string {
	k := strings.ToLower(key)
	if k == authn.DefaultAuthKey {
		return k
	}
	k = strings.TrimPrefix(strings.TrimPrefix(k, "https://"), "http://")
	k, _, _ = strings.Cut(k, "/")
	return k
}

func fromAuthConfig(a authn.AuthConfig) Credential {
	c := Credential{IdentityToken: NewSecret(a.IdentityToken), RegistryToken: NewSecret(a.RegistryToken)}
	if a.IdentityToken == "" {
		c.Username, c.Password = a.Username, NewSecret(a.Password)
	}
	return c
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
