package httpverify

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// MaxDecisions is how many verified manifests a route remembers; beyond
// it an arbitrary one is forgotten (and verified again when asked for).
const MaxDecisions = 100000

// DecisionsFile is the name of the decisions file in the route's
// cache.dir.
const DecisionsFile = "verify-decisions.json"

// decision is what is remembered of a verified manifest: the keys that
// verified it (or the index whose verified signature covers it), and the
// blobs or manifests it references, once its body was seen.
type decision struct {
	Keys     []string  `json:"keys"`
	Via      string    `json:"via,omitempty"`      // the index (repo@digest) that covers it
	Blobs    []string  `json:"blobs,omitempty"`    // an image manifest's config and layers
	Children []string  `json:"children,omitempty"` // an index's manifests
	Time     time.Time `json:"time"`
}

// decisions are a route's verified manifests by "repository@digest",
// kept in memory and, with a file, across restarts. Only verified
// decisions are kept: a refusal is decided again on the next request, so
// that a signature pushed later counts at once.
type decisions struct {
	path string // "": memory only
	log  *slog.Logger

	mu      sync.Mutex
	m       map[string]*decision
	blobs   map[string]map[string]bool // repo@blob -> manifests (repo@digest) referencing it
	covered map[string]string          // repo@manifest -> the index (repo@digest) listing it
}

func newDecisions(path string, log *slog.Logger) *decisions {
	d := &decisions{path: path, log: log, m: map[string]*decision{}, blobs: map[string]map[string]bool{}, covered: map[string]string{}}
	d.load()
	return d
}

// load reads the file; a missing one is empty, an unreadable or corrupt
// one is logged and ignored (its decisions are made again).
func (d *decisions) load() {
	if d.path == "" {
		return
	}
	b, err := os.ReadFile(d.path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var m map[string]*decision
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		d.log.Warn("signature decisions not loaded: they are made again", "path", d.path, "err", err)
		return
	}
	for k, v := range m {
		if v != nil && len(d.m) < MaxDecisions {
			d.putLocked(k, v)
		}
	}
}

// putLocked stores v as key's decision and indexes what it references.
func (d *decisions) putLocked(key string, v *decision) {
	if _, ok := d.m[key]; !ok && len(d.m) >= MaxDecisions {
		for k := range d.m {
			delete(d.m, k)
			break
		}
	}
	d.m[key] = v
	repo := repoOf(key)
	for _, b := range v.Blobs {
		bk := repo + "@" + b
		if d.blobs[bk] == nil {
			d.blobs[bk] = map[string]bool{}
		}
		d.blobs[bk][key] = true
	}
	for _, c := range v.Children {
		d.covered[repo+"@"+c] = key
	}
}

// lookup returns key's decision if it holds with the keys in trusted
// (fingerprints): made by one of them, directly or by a covering index.
func (d *decisions) lookup(key string, trusted map[string]bool) (*decision, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v, ok := d.m[key]; ok && d.holdsLocked(v, trusted, 0) {
		return v, true
	}
	if idx, ok := d.covered[key]; ok {
		if v, ok := d.m[idx]; ok && d.holdsLocked(v, trusted, 0) {
			return &decision{Keys: v.Keys, Via: idx}, true
		}
	}
	return nil, false
}

// holdsLocked reports whether v was made by a trusted key (through the
// index that covers it).
func (d *decisions) holdsLocked(v *decision, trusted map[string]bool, depth int) bool {
	if v.Via != "" {
		iv, ok := d.m[v.Via]
		return ok && depth < 4 && d.holdsLocked(iv, trusted, depth+1)
	}
	for _, k := range v.Keys {
		if trusted[k] {
			return true
		}
	}
	return false
}

// blobAllowed reports whether a manifest of repo that holds with trusted
// references blob.
func (d *decisions) blobAllowed(repo, blob string, trusted map[string]bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for key := range d.blobs[repo+"@"+blob] {
		if v, ok := d.m[key]; ok && d.holdsLocked(v, trusted, 0) {
			return true
		}
	}
	return false
}

// record stores key's decision and saves the file.
func (d *decisions) record(key string, v *decision) {
	d.mu.Lock()
	d.putLocked(key, v)
	snapshot, err := json.Marshal(d.m)
	d.mu.Unlock()
	if err == nil {
		err = d.save(snapshot)
	}
	if err != nil {
		d.log.Warn("signature decisions not saved: they are made again after a restart", "path", d.path, "err", err)
	}
}

// save writes the file atomically (a temporary file renamed over it).
func (d *decisions) save(b []byte) error {
	if d.path == "" {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(d.path), ".verify-decisions-*")
	if err != nil {
		return fmt.Errorf("save decisions: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("save decisions: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save decisions: %w", err)
	}
	if err := os.Rename(tmp.Name(), d.path); err != nil {
		return fmt.Errorf("save decisions: %w", err)
	}
	return nil
}

// repoOf is the repository of a "repository@digest" key.
func repoOf(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '@' {
			return key[:i]
		}
	}
	return key
}
