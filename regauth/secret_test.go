package regauth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const testSecret = "s3cr3t-P4ss"

func TestSecretNeverPrinted(t *testing.T) {
	values := map[string]any{
		"secret":          NewSecret(testSecret),
		"password cred":   Credential{Username: "robot", Password: NewSecret(testSecret)},
		"identity cred":   Credential{IdentityToken: NewSecret(testSecret)},
		"token":           Token{Value: NewSecret(testSecret)},
		"pointer to cred": &Credential{Username: "robot", Password: NewSecret(testSecret)},
		"in a struct":     struct{ C Credential }{Credential{RegistryToken: NewSecret(testSecret)}},
	}
	for name, v := range values {
		t.Run(name, func(t *testing.T) {
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
				if s := fmt.Sprintf(verb, v); strings.Contains(s, testSecret) || strings.Contains(s, fmt.Sprintf("%x", testSecret)) {
					t.Errorf("%s prints the secret: %s", verb, s)
				}
			}
			b, _ := json.Marshal(v)
			var logs bytes.Buffer
			slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "v", v)
			slog.New(slog.NewTextHandler(&logs, nil)).Info("x", "v", v)
			if bytes.Contains(b, []byte(testSecret)) || bytes.Contains(logs.Bytes(), []byte(testSecret)) {
				t.Errorf("JSON or slog shows the secret: %s %s", b, logs.Bytes())
			}
		})
	}
}

func TestSecretReveal(t *testing.T) {
	s := NewSecret(testSecret)
	if s.Reveal() != testSecret || s.Empty() || !NewSecret("").Empty() {
		t.Fatal("Reveal/Empty")
	}
	if got := fmt.Sprint(NewSecret("")); got != "" {
		t.Errorf("an empty secret prints %q, want nothing", got)
	}
}

func TestCredentialString(t *testing.T) {
	tests := []struct {
		name string
		c    Credential
		want string
	}{
		{name: "anonymous", c: Credential{}, want: "anonymous"},
		{name: "user", c: Credential{Username: "robot", Password: NewSecret("p")}, want: "user robot"},
		{name: "identity", c: Credential{IdentityToken: NewSecret("t")}, want: "identity token"},
		{name: "registry token", c: Credential{RegistryToken: NewSecret("t")}, want: "registry token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.String(); got != tt.want {
				t.Errorf("String = %q, want %q", got, tt.want)
			}
		})
	}
}

// assertNoSecret fails when err's message or %v/%+v forms hold secret.
func assertNoSecret(t *testing.T, err error, secret string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		if strings.Contains(s, secret) {
			t.Errorf("error shows the secret: %s", s)
		}
	}
}
