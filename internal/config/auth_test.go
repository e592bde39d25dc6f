package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// authFiles writes the credential files the auth tests name, in dir:
// a password file, an empty one, and a docker config with an entry for
// a.example.com only.
func authFiles(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		"robot.password": "s3cret-pass\n",
		"empty.password": "",
		"docker.json":    `{"auths":{"a.example.com":{"auth":"cm9ib3Q6czNjcmV0LXBhc3M="}}}`,
		"other.json":     `{"auths":{"ghcr.io":{"auth":"cm9ib3Q6czNjcmV0LXBhc3M="}}}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHTTPAuth(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	authFiles(t, dir)
	tests := []struct {
		name string
		auth string
		want *Auth
	}{
		{name: "anonymous", auth: "{anonymous: true}", want: &Auth{Anonymous: true}},
		{name: "password file", auth: "{username: robot, password_file: robot.password}",
			want: &Auth{Username: "robot", PasswordFile: filepath.Join(dir, "robot.password")}},
		{name: "docker config", auth: "{docker_config: docker.json}", want: &Auth{DockerConfig: filepath.Join(dir, "docker.json")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(filepath.Join(dir, "snigate.yaml"), []byte(minimalBridge+"    http: {auth: "+tc.auth+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Routes[0].HTTP.Auth; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Auth = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestHTTPAuthErrors(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	authFiles(t, dir)
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{name: "splice route", yaml: minimalSplice + "    http:\n      auth: {anonymous: true}\n", want: []string{
			"snigate.yaml:8: routes[0].http: only allowed in bridge mode (this route is mode: splice); remove it or use mode: bridge",
			"snigate.yaml:9: routes[0].http.auth: auth needs an http route: a splice route passes the node's TLS through and cannot answer the registry's challenges",
		}},
		{name: "no kind", yaml: minimalBridge + "    http: {auth: {anonymous: false}}\n", want: []string{
			"snigate.yaml:10: routes[0].http.auth: auth needs one of anonymous: true, username with password_file, or docker_config",
		}},
		{name: "several kinds", yaml: minimalBridge + "    http: {auth: {anonymous: true, docker_config: docker.json}}\n", want: []string{
			"snigate.yaml:10: routes[0].http.auth: auth takes only one of anonymous, username with password_file, and docker_config",
		}},
		{name: "username without password file", yaml: minimalBridge + "    http: {auth: {username: robot}}\n", want: []string{
			"snigate.yaml:10: routes[0].http.auth.username: username needs a password_file: the file whose first line is the password",
		}},
		{name: "docker config with a wildcard sni", yaml: strings.Replace(minimalBridge, "[a.example.com]", `[a.example.com, "*.example.com"]`, 1) + "    http: {auth: {docker_config: docker.json}}\n", want: []string{
			`snigate.yaml:10: routes[0].http.auth.docker_config: a docker config's entries are per host, and the route's sni has the pattern "*.example.com": list the registry's names, or use username with password_file`,
		}},
		{name: "unknown key", yaml: minimalBridge + "    http: {auth: {anonymous: true, password: hunter2}}\n", want: []string{
			"snigate.yaml:10: routes[0].http.auth.password: unknown key; allowed here: anonymous, username, password_file, docker_config",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseInDir(t, dir, tc.yaml)
			for i := range got {
				got[i] = strings.ReplaceAll(got[i], dir+"/", "")
				if strings.Contains(got[i], "s3cret") || strings.Contains(got[i], "hunter2") {
					t.Errorf("a secret in a check error: %s", got[i])
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestHTTPAuthWithoutFiles: a reader that reads no files (the CoreDNS
// plugin) still refuses none or several kinds of credentials, and does
// not open the password file.
func TestHTTPAuthWithoutFiles(t *testing.T) {
	tests := []struct {
		name, auth, want string
	}{
		{name: "password file not read", auth: "{username: robot, password_file: /nonexistent/robot.password}"},
		{name: "several kinds", auth: "{anonymous: true, username: robot, password_file: /x}", want: "auth takes only one of"},
		{name: "none", auth: "{}", want: "auth needs one of"},
		{name: "password file without username", auth: "{password_file: /x}", want: "password_file needs a username"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "snigate.yaml")
			if err := os.WriteFile(path, []byte(minimalBridge+"    http: {auth: "+tc.auth+"}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadWithoutFiles(path)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("LoadWithoutFiles: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("LoadWithoutFiles: %v, want an error with %q", err, tc.want)
			}
		})
	}
}
