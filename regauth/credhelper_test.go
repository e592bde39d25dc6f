package regauth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeHelper is docker-credential-test: it answers by the server URL it
// reads on stdin and appends each URL to the calls file beside it.
const fakeHelper = `#!/bin/sh
read -r url
echo "$url" >> "$(dirname "$0")/calls"
case "$url" in
  https://index.docker.io/v1/) printf '{"ServerURL":"%s","Username":"hub","Secret":"hubpass"}' "$url";;
  tok.example) printf '{"Username":"<token>","Secret":"refresh-abc"}';;
  none.example) echo "credentials not found in native keychain"; exit 1;;
  junk.example) echo "` + testSecret + ` is not json";;
  big.example) head -c 200000 /dev/zero | tr '\0' a;;
  hang.example) exec sleep 1000;;
  fail.example) echo "` + testSecret + `"; echo "` + testSecret + `" >&2; exit 3;;
  empty.example) printf '{"Username":"u","Secret":""}';;
  *) printf '{"Username":"u","Secret":"%s"}' "$url-pass";;
esac
`

// installHelper puts docker-credential-test on PATH and returns its
// directory.
func installHelper(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "docker-credential-test"), []byte(fakeHelper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

func helperCalls(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calls"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

func TestCredentialHelperProtocol(t *testing.T) {
	installHelper(t)
	tests := []struct {
		name, server string
		want         Credential
		wantErr      string
		notFound     bool
	}{
		{name: "docker hub server URL", server: "https://index.docker.io/v1/", want: Credential{Username: "hub", Password: NewSecret("hubpass")}},
		{name: "plain host", server: "ghcr.io", want: Credential{Username: "u", Password: NewSecret("ghcr.io-pass")}},
		{name: "identity token", server: "tok.example", want: Credential{IdentityToken: NewSecret("refresh-abc")}},
		{name: "not found", server: "none.example", notFound: true, wantErr: "no credentials"},
		{name: "not JSON", server: "junk.example", wantErr: "not JSON"},
		{name: "output bounded", server: "big.example", wantErr: "more than"},
		{name: "timeout", server: "hang.example", wantErr: "deadline exceeded"},
		{name: "failure", server: "fail.example", wantErr: "exit status 3"},
		{name: "empty secret", server: "empty.example", notFound: true, wantErr: "empty Secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := 30 * time.Second // a bound for a process start on a busy machine
			if tt.server == "hang.example" {
				timeout = 100 * time.Millisecond
			}
			got, err := runHelper(context.Background(), "test", tt.server, timeout)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("got %#v, %v; want %#v", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
			}
			if errors.Is(err, ErrNoCredential) != tt.notFound {
				t.Errorf("errors.Is(err, ErrNoCredential) = %v, want %v", !tt.notFound, tt.notFound)
			}
			assertNoSecret(t, err, testSecret)
		})
	}
}

func TestCredentialHelperName(t *testing.T) {
	for _, name := range []string{"", "../../bin/sh", "a/b"} {
		if _, err := runHelper(context.Background(), name, "x", time.Second); err == nil {
			t.Errorf("helper name %q accepted", name)
		}
	}
}

func TestDockerConfigHelpers(t *testing.T) {
	dir := installHelper(t)
	tests := []struct {
		name, config, host string
		want               Credential
		server             string
	}{
		{name: "credHelpers for the host", host: "ghcr.io", config: `{"credHelpers":{"ghcr.io":"test"},"auths":{"ghcr.io":{"auth":"` + b64("file:p") + `"}}}`,
			want: Credential{Username: "u", Password: NewSecret("ghcr.io-pass")}, server: "ghcr.io"},
		{name: "credsStore after auths", host: "quay.io", config: `{"credsStore":"test","auths":{"quay.io":{"auth":"` + b64("file:p") + `"}}}`,
			want: Credential{Username: "file", Password: NewSecret("p")}},
		{name: "credsStore when no auths entry", host: "quay.io", config: `{"credsStore":"test","auths":{"quay.io":{}}}`,
			want: Credential{Username: "u", Password: NewSecret("quay.io-pass")}, server: "quay.io"},
		{name: "docker hub asks with its legacy URL", host: "registry-1.docker.io", config: `{"credHelpers":{"https://index.docker.io/v1/":"test"}}`,
			want: Credential{Username: "hub", Password: NewSecret("hubpass")}, server: "https://index.docker.io/v1/"},
		{name: "docker hub credsStore", host: "registry-1.docker.io", config: `{"credsStore":"test"}`,
			want: Credential{Username: "hub", Password: NewSecret("hubpass")}, server: "https://index.docker.io/v1/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.Remove(filepath.Join(dir, "calls"))
			path := filepath.Join(t.TempDir(), "config.json")
			writeFile(t, path, tt.config)
			got, err := NewDockerConfig(path, tt.host).Credential(context.Background())
			if err != nil || got != tt.want {
				t.Fatalf("got %#v, %v; want %#v", got, err, tt.want)
			}
			calls := helperCalls(t, dir)
			if tt.server == "" && len(calls) != 0 || tt.server != "" && (len(calls) != 1 || calls[0] != tt.server) {
				t.Errorf("helper asked for %q, want %q", calls, tt.server)
			}
		})
	}
}

func TestDockerConfigHelperAnswerReused(t *testing.T) {
	dir := installHelper(t)
	path := filepath.Join(t.TempDir(), "config.json")
	writeFile(t, path, `{"credHelpers":{"ghcr.io":"test"}}`)
	src := NewDockerConfig(path, "ghcr.io")
	for range 5 {
		if _, err := src.Credential(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(helperCalls(t, dir)); n != 1 {
		t.Fatalf("helper ran %d times for 5 uses, want 1", n)
	}
	writeFile(t, path, `{"credHelpers":{"ghcr.io":"test"},"auths":{}}`) // a change runs it again
	if _, err := src.Credential(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(helperCalls(t, dir)); n != 2 {
		t.Fatalf("helper ran %d times after the config changed, want 2", n)
	}
}
