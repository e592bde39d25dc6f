package regauth

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSource(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	writeFile(t, pw, testSecret+"\n")
	empty := filepath.Join(dir, "empty")
	writeFile(t, empty, "\n")
	cfg := filepath.Join(dir, "config.json")
	writeFile(t, cfg, `{"auths":{"ghcr.io":{"auth":"`+b64("u:"+testSecret)+`"}},"credHelpers":{"gcr.io":"gcloud"}}`)
	store := filepath.Join(dir, "store.json")
	writeFile(t, store, `{"credsStore":"desktop"}`)
	bad := filepath.Join(dir, "bad.json")
	writeFile(t, bad, `{"auths":`)
	tests := []struct {
		name    string
		c       SourceConfig
		wantErr string // "" for none
	}{
		{name: "anonymous", c: SourceConfig{Anonymous: true}},
		{name: "password file", c: SourceConfig{Username: "robot", PasswordFile: pw}},
		{name: "docker config entry", c: SourceConfig{DockerConfig: cfg, Host: "ghcr.io"}},
		{name: "docker config helper (not run)", c: SourceConfig{DockerConfig: cfg, Host: "gcr.io"}},
		{name: "docker config credsStore", c: SourceConfig{DockerConfig: store, Host: "quay.io"}},
		{name: "nothing", c: SourceConfig{}, wantErr: "needs one of"},
		{name: "two kinds", c: SourceConfig{Anonymous: true, DockerConfig: cfg}, wantErr: "only one of"},
		{name: "username without password file", c: SourceConfig{Username: "robot"}, wantErr: "needs a password_file"},
		{name: "password file without username", c: SourceConfig{PasswordFile: pw}, wantErr: "needs a username"},
		{name: "missing password file", c: SourceConfig{Username: "robot", PasswordFile: filepath.Join(dir, "nope")}, wantErr: "no such file"},
		{name: "empty password file", c: SourceConfig{Username: "robot", PasswordFile: empty}, wantErr: "empty"},
		{name: "docker config without the host", c: SourceConfig{DockerConfig: cfg, Host: "quay.io"}, wantErr: "no auths entry, credHelpers or credsStore"},
		{name: "docker config missing", c: SourceConfig{DockerConfig: filepath.Join(dir, "nope.json"), Host: "ghcr.io"}, wantErr: "no such file"},
		{name: "docker config not JSON", c: SourceConfig{DockerConfig: bad, Host: "ghcr.io"}, wantErr: "parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckSource(tt.c)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckSource = %v", err)
				}
				if _, err := NewSource(tt.c); err != nil {
					t.Fatalf("NewSource = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckSource = %v, want an error saying %q", err, tt.wantErr)
			}
			assertNoSecret(t, err, testSecret)
		})
	}
}

func TestCheckRoute(t *testing.T) {
	if err := CheckRoute(false); !errors.Is(err, ErrNotHTTPRoute) {
		t.Errorf("a splice route with auth: %v, want ErrNotHTTPRoute", err)
	}
	if err := CheckRoute(true); err != nil {
		t.Errorf("an http route with auth: %v", err)
	}
}
