package s3tier

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/minio/minio-go/v7/pkg/credentials"
)

// fileCreds is the access and secret keys as two files hold them, read
// again whenever either file's size, mtime or inode changes (a rotated
// secret is used from the next S3 call, without a reload).
type fileCreds struct {
	access, secret string

	mu   sync.Mutex
	seen [2]fileStamp
	val  credentials.Value
	err  error
}

var _ credentials.Provider = (*fileCreds)(nil)

// fileStamp is what tells a file changed.
type fileStamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{size: -1}
	}
	return fileStamp{size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}
}

func newFileCreds(access, secret string) (*fileCreds, error) {
	c := &fileCreds{access: access, secret: secret}
	if _, err := c.Retrieve(); err != nil {
		return nil, err
	}
	return c, nil
}

// RetrieveWithCredContext reads the two files.
func (c *fileCreds) RetrieveWithCredContext(*credentials.CredContext) (credentials.Value, error) {
	return c.Retrieve()
}

// Retrieve reads the two files.
func (c *fileCreds) Retrieve() (credentials.Value, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = [2]fileStamp{stampOf(c.access), stampOf(c.secret)}
	ak, err := readKey(c.access)
	if err != nil {
		c.err = err
		return credentials.Value{}, err
	}
	sk, err := readKey(c.secret)
	if err != nil {
		c.err = err
		return credentials.Value{}, err
	}
	c.val, c.err = credentials.Value{AccessKeyID: ak, SecretAccessKey: sk, SignerType: credentials.SignatureV4}, nil
	return c.val, nil
}

// IsExpired reports whether either file changed since it was read.
func (c *fileCreds) IsExpired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil || c.seen != [2]fileStamp{stampOf(c.access), stampOf(c.secret)}
}

// readKey returns a key file's content without surrounding white space.
func readKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read s3 key: %w", err)
	}
	k := string(bytes.TrimSpace(b))
	if k == "" {
		return "", fmt.Errorf("read s3 key %s: the file is empty", path)
	}
	return k, nil
}
