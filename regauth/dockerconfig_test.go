package regauth

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"testing"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestDockerConfigLookup(t *testing.T) {
	tests := []struct {
		name, config, host string
		want               Credential
		wantErr            bool
	}{
		{name: "auth field", host: "ghcr.io", config: `{"auths":{"ghcr.io":{"auth":"` + b64("user:pa:ss") + `"}}}`,
			want: Credential{Username: "user", Password: NewSecret("pa:ss")}},
		{name: "username and password", host: "quay.io", config: `{"auths":{"quay.io":{"username":"u","password":"p"}}}`,
			want: Credential{Username: "u", Password: NewSecret("p")}},
		{name: "key with scheme and path", host: "registry.example:5000", config: `{"auths":{"https://registry.example:5000/v2/":{"auth":"` + b64("u:p") + `"}}}`,
			want: Credential{Username: "u", Password: NewSecret("p")}},
		{name: "host case", host: "GHCR.io", config: `{"auths":{"ghcr.io":{"auth":"` + b64("u:p") + `"}}}`,
			want: Credential{Username: "u", Password: NewSecret("p")}},
		{name: "identity token", host: "registry.example", config: `{"auths":{"registry.example":{"identitytoken":"rt"}}}`,
			want: Credential{IdentityToken: NewSecret("rt")}},
		{name: "registry token", host: "registry.example", config: `{"auths":{"registry.example":{"registrytoken":"bt"}}}`,
			want: Credential{RegistryToken: NewSecret("bt")}},
		{name: "docker hub legacy key for registry-1", host: "registry-1.docker.io", config: `{"auths":{"https://index.docker.io/v1/":{"auth":"` + b64("hub:p") + `"}}}`,
			want: Credential{Username: "hub", Password: NewSecret("p")}},
		{name: "docker hub short key", host: "registry-1.docker.io", config: `{"auths":{"docker.io":{"auth":"` + b64("hub:p") + `"}}}`,
			want: Credential{Username: "hub", Password: NewSecret("p")}},
		{name: "docker hub legacy key first", host: "index.docker.io", config: `{"auths":{"docker.io":{"auth":"` + b64("b:p") + `"},"https://index.docker.io/v1/":{"auth":"` + b64("a:p") + `"}}}`,
			want: Credential{Username: "a", Password: NewSecret("p")}},
		{name: "empty placeholder entry is no entry", host: "ghcr.io", config: `{"auths":{"ghcr.io":{}}}`, wantErr: true},
		{name: "another host only", host: "ghcr.io", config: `{"auths":{"ghcr.io.evil":{"auth":"` + b64("u:p") + `"}}}`, wantErr: true},
		{name: "bad auth field", host: "ghcr.io", config: `{"auths":{"ghcr.io":{"auth":"!!!"}}}`, wantErr: true},
		{name: "not json", host: "ghcr.io", config: `{"auths":`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			writeFile(t, path, tt.config)
			got, err := NewDockerConfig(path, tt.host).Credential(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %#v, want %#v (%q/%q)", got, tt.want, got.Username, got.Password.Reveal())
			}
		})
	}
}

func TestDockerConfigReadAgainOnChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	writeFile(t, path, `{"auths":{"ghcr.io":{"auth":"`+b64("u:first")+`"}}}`)
	src := NewDockerConfig(path, "ghcr.io")
	if c, err := src.Credential(context.Background()); err != nil || c.Password.Reveal() != "first" {
		t.Fatalf("got %q, %v", c.Password.Reveal(), err)
	}
	writeFile(t, path, `{"auths":{"ghcr.io":{"auth":"`+b64("u:second")+`"}}}`)
	if c, err := src.Credential(context.Background()); err != nil || c.Password.Reveal() != "second" {
		t.Fatalf("after the change got %q, %v", c.Password.Reveal(), err)
	}
}

func TestDockerConfigErrorsHoldNoSecret(t *testing.T) {
	for _, cfg := range []string{
		`{"auths":{"ghcr.io":{"auth":"` + testSecret + `!"}}}`,
		`{"auths":{"ghcr.io":{"auth":"` + b64(testSecret) + `"}}}`, // no colon
		`{"auths":{"ghcr.io":{"password":` + testSecret + `}}}`,
		`{"auths":{"ghcr.io":{"password":["` + testSecret + `"]}}}`,
	} {
		path := filepath.Join(t.TempDir(), "config.json")
		writeFile(t, path, cfg)
		_, err := NewDockerConfig(path, "ghcr.io").Credential(context.Background())
		if err == nil {
			t.Fatalf("config %q accepted", cfg)
		}
		assertNoSecret(t, err, testSecret)
	}
}
