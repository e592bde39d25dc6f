package regcache

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
)

// The directory's layout:
//
//	<dir>/lock                          flock held by the Cache that has it open
//	<dir>/tmp/                          fills in progress (emptied at Open)
//	<dir>/sha256/9f/9f86d08...          the content, exactly the digest's bytes
//	<dir>/sha256/9f/9f86d08....meta     its metadata (metaFile, JSON)
//
// A content file is renamed into place only when complete and verified,
// and its metadata after it; Open keeps a content file only with its
// metadata beside it, so a crash between the two renames leaves nothing
// that is served.
const (
	lockName = "lock"
	tmpName  = "tmp"
	metaExt  = ".meta"
)

// metaFile is what is stored beside a content file.
type metaFile struct {
	Digest string      `json:"digest"`
	Size   int64       `json:"size"`
	Header http.Header `json:"header,omitempty"`
}

func (c *Cache) tmpDir() string { return filepath.Join(c.cfg.Dir, tmpName) }

// contentPath is where d's content is stored.
func (c *Cache) contentPath(d digest) string {
	return filepath.Join(c.cfg.Dir, d.algo, d.hex[:2], d.hex)
}

func (c *Cache) metaPath(d digest) string { return c.contentPath(d) + metaExt }

// writeMeta writes d's metadata under a temporary name and returns it;
// the caller renames it into place.
func (c *Cache) writeMeta(d digest, size int64, h http.Header) (string, error) {
	data, err := json.Marshal(metaFile{Digest: d.String(), Size: size, Header: h})
	if err != nil {
		return "", fmt.Errorf("encode metadata of %s: %w", d, err)
	}
	f, err := os.CreateTemp(c.tmpDir(), d.hex[:16]+"-*"+metaExt)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// readMeta reads d's metadata; it must name d and size.
func (c *Cache) readMeta(d digest, size int64) (http.Header, error) {
	data, err := os.ReadFile(c.metaPath(d))
	if err != nil {
		return nil, err
	}
	var m metaFile
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: metadata of %s: %w", errCorrupt, d, err)
	}
	if m.Digest != d.String() || m.Size != size {
		return nil, fmt.Errorf("%w: metadata of %s names %s, %d bytes, the file has %d",
			errCorrupt, d, m.Digest, m.Size, size)
	}
	return m.Header, nil
}
