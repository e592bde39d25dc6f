package regauth

import (
	"fmt"
	"log/slog"
)

// redacted is what a Secret prints as, whatever the verb.
const redacted = "[redacted]"

// Secret is a password, identity token or bearer token. It prints as
// "[redacted]" with every fmt verb (%v, %+v, %#v, %s, %q, %x), in slog
// records and in JSON, so a Credential or a Token can be logged or put in
// an error without leaking what it holds. Reveal gives the value to the
// code that sends it. The zero Secret is empty.
type Secret struct {
	value string
}

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{value: s} }

// Reveal returns the secret's value, for the code that sends it.
func (s Secret) Reveal() string { return s.value }

// Empty reports whether the secret holds nothing.
func (s Secret) Empty() bool { return s.value == "" }

// String implements fmt.Stringer.
func (s Secret) String() string { return s.placeholder() }

// GoString implements fmt.GoStringer.
func (s Secret) GoString() string { return "regauth.Secret(" + s.placeholder() + ")" }

// Format implements fmt.Formatter: every verb prints the placeholder.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(s.GoString()))
		return
	}
	_, _ = f.Write([]byte(s.placeholder()))
}

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.placeholder()) }

// MarshalText implements encoding.TextMarshaler (JSON, YAML, slog's
// handlers): the placeholder, never the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.placeholder()), nil }

func (s Secret) placeholder() string {
	if s.value == "" {
		return ""
	}
	return redacted
}

// Credential is what a Source gives for the upstream's host. The zero
// Credential is anonymous.
type Credential struct {
	// Username goes with Password in HTTP Basic, to the registry itself or
	// to its token service. Empty with IdentityToken.
	Username string
	// Password is the Basic password (or a personal access token).
	Password Secret
	// IdentityToken is an OAuth2 refresh token, exchanged at the token
	// service with grant_type=refresh_token (docker config
	// "identitytoken", or a credential helper's "<token>" username).
	IdentityToken Secret
	// RegistryToken is a bearer token sent to the registry as it is
	// (docker config "registrytoken").
	RegistryToken Secret
}

// Anonymous reports whether c holds no credentials.
func (c Credential) Anonymous() bool {
	return c.Password.Empty() && c.IdentityToken.Empty() && c.RegistryToken.Empty()
}

// basic reports whether c can answer a Basic challenge.
func (c Credential) basic() bool { return c.Username != "" && !c.Password.Empty() }

// String implements fmt.Stringer: the kind of credential and the user,
// never a secret.
func (c Credential) String() string {
	switch {
	case !c.IdentityToken.Empty():
		return "identity token"
	case !c.RegistryToken.Empty():
		return "registry token"
	case c.basic():
		return "user " + c.Username
	default:
		return "anonymous"
	}
}

// GoString implements fmt.GoStringer.
func (c Credential) GoString() string { return "regauth.Credential(" + c.String() + ")" }

// Format implements fmt.Formatter, so %+v does not print the fields.
func (c Credential) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(c.GoString()))
		return
	}
	_, _ = f.Write([]byte(c.String()))
}

// LogValue implements slog.LogValuer.
func (c Credential) LogValue() slog.Value { return slog.StringValue(c.String()) }
