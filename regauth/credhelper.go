package regauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Credential helper limits.
const (
	// DefaultHelperTimeout bounds one run of a docker credential helper.
	DefaultHelperTimeout = 10 * time.Second
	// MaxHelperOutput bounds what a helper may print; more is an error.
	MaxHelperOutput = 64 << 10
)

// helperPrefix is the docker credential helper programs' name prefix.
const helperPrefix = "docker-credential-"

// identityTokenUser is the username a helper answers with when Secret is
// an identity token rather than a password.
const identityTokenUser = "<token>"

// helperNotFound is what helpers print when they hold nothing for the
// server (docker-credential-helpers' errCredentialsNotFoundMessage).
const helperNotFound = "credentials not found in native keychain"

// helperReply is the JSON a helper's get prints.
type helperReply struct {
	Username string `json:"Username"`
	Secret   string `json:"Secret"`
}

// runHelper runs docker-credential-NAME get with serverURL on its
// standard input, as the docker credential helper protocol says, under
// timeout and with its output bounded. Errors never carry the output
// (it may hold a secret).
func runHelper(ctx context.Context, name, serverURL string, timeout time.Duration) (Credential, error) {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return Credential{}, fmt.Errorf("credential helper %q: not a helper name", name)
	}
	prog := helperPrefix + name
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, "get")
	cmd.Stdin = strings.NewReader(serverURL)
	out := &boundedBuffer{max: MaxHelperOutput}
	cmd.Stdout = out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	switch {
	case out.overflow:
		return Credential{}, fmt.Errorf("credential helper %s get: more than %d bytes of output", prog, MaxHelperOutput)
	case err != nil && strings.Contains(out.String(), helperNotFound):
		return Credential{}, fmt.Errorf("credential helper %s get %s: %w", prog, serverURL, ErrNoCredential)
	case ctx.Err() != nil:
		return Credential{}, fmt.Errorf("credential helper %s get: %w", prog, ctx.Err())
	case err != nil:
		return Credential{}, fmt.Errorf("credential helper %s get: %w", prog, scrubExecError(err))
	}
	return parseHelperReply(prog, out.Bytes())
}

// parseHelperReply turns a helper's JSON into a Credential.
func parseHelperReply(prog string, b []byte) (Credential, error) {
	var r helperReply
	if err := json.Unmarshal(b, &r); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return Credential{}, fmt.Errorf("credential helper %s get: output is not JSON (at byte %d)", prog, se.Offset)
		}
		return Credential{}, fmt.Errorf("credential helper %s get: output is not {\"Username\",\"Secret\"}", prog)
	}
	if r.Secret == "" {
		return Credential{}, fmt.Errorf("credential helper %s get: %w (empty Secret)", prog, ErrNoCredential)
	}
	if r.Username == identityTokenUser {
		return Credential{IdentityToken: NewSecret(r.Secret)}, nil
	}
	return Credential{Username: r.Username, Password: NewSecret(r.Secret)}, nil
}

// scrubExecError keeps an exec error's kind (exit status, not found) and
// drops anything the program wrote (an *exec.ExitError carries stderr).
func scrubExecError(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("exit status %d", ee.ExitCode())
	}
	return err
}

// boundedBuffer keeps the first max bytes written to it and notes that
// more came; it never fails a write, so the program is not killed by
// SIGPIPE before it exits. (The buffer is a field, not embedded: an
// embedded bytes.Buffer's ReadFrom would let io.Copy bypass Write.)
type boundedBuffer struct {
	buf      bytes.Buffer
	max      int
	overflow bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.overflow = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *boundedBuffer) Bytes() []byte  { return b.buf.Bytes() }
func (b *boundedBuffer) String() string { return b.buf.String() }
