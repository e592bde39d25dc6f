package regauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// Source gives the credentials the gateway answers the registry's
// challenges with. Implementations re-read what they hold when it changes
// and are safe for concurrent use; Credential is called for each token
// fetch and, on registries that ask for Basic, for each request, so it
// must be cheap when nothing changed.
type Source interface {
	Credential(ctx context.Context) (Credential, error)
}

// ErrNoCredential is returned (wrapped) when a source holds nothing for
// the upstream's host.
var ErrNoCredential = errors.New("no credentials for the host")

// Anonymous is the Source of no credentials: tokens are asked for
// anonymously (Docker Hub, public ghcr.io and quay.io repositories).
var Anonymous Source = anonymousSource{}

type anonymousSource struct{}

func (anonymousSource) Credential(context.Context) (Credential, error) { return Credential{}, nil }

// PasswordFile is a username with a password read from a file (a mounted
// Kubernetes Secret, say). The file is stat'ed on each use and read again
// when its inode, size or modification time changed; one trailing newline
// is ignored.
type PasswordFile struct {
	username string
	file     watchedFile[Secret]
}

var _ Source = (*PasswordFile)(nil)

// NewPasswordFile returns the Source of username and the password in
// path. It reads nothing yet.
func NewPasswordFile(username, path string) *PasswordFile {
	return &PasswordFile{username: username, file: watchedFile[Secret]{path: path, parse: parsePassword}}
}

// Credential implements Source.
func (p *PasswordFile) Credential(context.Context) (Credential, error) {
	pw, err := p.file.load()
	if err != nil {
		return Credential{}, fmt.Errorf("password file: %w", err)
	}
	return Credential{Username: p.username, Password: pw}, nil
}

// parsePassword takes a password file's content: the first line, which
// must not be empty.
func parsePassword(b []byte) (Secret, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) == 0 {
		return Secret{}, errors.New("the password is empty")
	}
	return NewSecret(string(line)), nil
}
