package regauth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// writeFile writes b to path, replacing it with a rename as a Kubernetes
// Secret volume does.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestPasswordFile(t *testing.T) {
	tests := []struct {
		name, content, want string
		wantErr             bool
	}{
		{name: "one line", content: "pw\n", want: "pw"},
		{name: "no newline", content: "pw", want: "pw"},
		{name: "crlf", content: "pw\r\n", want: "pw"},
		{name: "spaces kept", content: " p w \n", want: " p w "},
		{name: "only the first line", content: "pw\nmore\n", want: "pw"},
		{name: "empty", content: "", wantErr: true},
		{name: "empty first line", content: "\npw", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "password")
			writeFile(t, path, tt.content)
			c, err := NewPasswordFile("robot", path).Credential(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && (c.Username != "robot" || c.Password.Reveal() != tt.want) {
				t.Errorf("got %q/%q, want robot/%q", c.Username, c.Password.Reveal(), tt.want)
			}
		})
	}
}

func TestPasswordFileReadAgainOnChange(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "password")
	writeFile(t, path, "first\n")
	src := NewPasswordFile("robot", path)
	for _, want := range []string{"first", "first"} {
		if c, err := src.Credential(context.Background()); err != nil || c.Password.Reveal() != want {
			t.Fatalf("got %v, %v; want %q", c.Password.Reveal(), err, want)
		}
	}
	writeFile(t, path, "second\n") // a rename: a new inode
	if c, _ := src.Credential(context.Background()); c.Password.Reveal() != "second" {
		t.Fatalf("after a rename got %q, want second", c.Password.Reveal())
	}
	if err := os.WriteFile(path, []byte("third-longer\n"), 0o600); err != nil { // in place
		t.Fatal(err)
	}
	if c, _ := src.Credential(context.Background()); c.Password.Reveal() != "third-longer" {
		t.Fatalf("after a rewrite got %q, want third-longer", c.Password.Reveal())
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Credential(context.Background()); err == nil {
		t.Fatal("a removed password file still gives credentials")
	}
}

func TestPasswordFileErrorsHoldNoSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "password")
	writeFile(t, path, string(make([]byte, MaxFileSize+1))+testSecret)
	_, err := NewPasswordFile("robot", path).Credential(context.Background())
	if err == nil {
		t.Fatal("an oversized password file was accepted")
	}
	assertNoSecret(t, err, testSecret)
}

func TestAnonymous(t *testing.T) {
	c, err := Anonymous.Credential(context.Background())
	if err != nil || !c.Anonymous() {
		t.Fatalf("Anonymous gave %v, %v", c, err)
	}
}

func TestNoCredentialIsWrapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	writeFile(t, path, `{"auths":{"other.example":{"auth":"dTpw"}}}`)
	_, err := NewDockerConfig(path, "registry.example").Credential(context.Background())
	if !errors.Is(err, ErrNoCredential) {
		t.Fatalf("err = %v, want ErrNoCredential", err)
	}
}
