package httpverify

import (
	"bufio"
	"bytes"
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
// cache.dir: one JSON line per verified decision, appended as they are
// made.
const DecisionsFile = "verify-decisions.jsonl"

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
	compact bool                       // the file has many more lines than decisions
}

func newDecisions(path string, log *slog.Logger) *decisions {
	d := &decisions{path: path, log: log, m: map[string]*decision{}, blobs: map[string]map[string]bool{}, covered: map[string]string{}}
	d.load()
	return d
}

// load reads the file, one JSON line per decision (the last of a key
// wins); a missing file is empty, lines that do not parse (a write cut
// by a crash) are skipped and logged. A file of many more lines than
// decisions is rewritten compacted by the next record (New writes
// nothing: snigate check builds it too).
func (d *decisions) load() {
	if d.path == "" {
		return
	}
	f, err := os.Open(d.path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		d.log.Warn("signature decisions not loaded: they are made again", "path", d.path, "err", err)
		return
	}
	defer f.Close()
	lines, bad := 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxDecisionLine)
	for sc.Scan() {
		lines++
		var l decisionLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Key == "" || l.Decision == nil {
			bad++
			continue
		}
		d.putLocked(l.Key, l.Decision)
	}
	if err := sc.Err(); err != nil || bad > 0 {
		d.log.Warn("signature decisions partly loaded: the others are made again", "path", d.path, "skipped", bad, "err", err)
	}
	d.compact = lines > 2*len(d.m)+1000
}

// maxDecisionLine bounds a line of the decisions file (an index of
// MaxDescriptors manifests fits).
const maxDecisionLine = 1 << 20

// decisionLine is a line of the decisions file.
type decisionLine struct {
	Key      string    `json:"key"`
	Decision *decision `json:"decision"`
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

// record stores key's decision and appends it to the file.
func (d *decisions) record(key string, v *decision) {
	d.mu.Lock()
	d.putLocked(key, v)
	var err error
	if d.compact && d.path != "" {
		d.compact = false
		err = d.compactLocked() // holds the lock: the file's one writer of this route meanwhile
		d.mu.Unlock()
	} else {
		d.mu.Unlock()
		err = d.appendLine(decisionLine{Key: key, Decision: v})
	}
	if err != nil {
		d.log.Warn("signature decision not saved: it is made again after a restart", "path", d.path, "err", err)
	}
}

// appendLine appends l to the file (one write, O_APPEND: the lines of
// two generations writing during a reload do not mix).
func (d *decisions) appendLine(l decisionLine) error {
	if d.path == "" {
		return nil
	}
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("save decision: %w", err)
	}
	f, err := os.OpenFile(d.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("save decision: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("save decision: %w", err)
	}
	return nil
}

// compactLocked rewrites the file with one line per decision (a
// temporary file renamed over it).
func (d *decisions) compactLocked() error {
	var buf bytes.Buffer
	for k, v := range d.m {
		b, err := json.Marshal(decisionLine{Key: k, Decision: v})
		if err != nil {
			return fmt.Errorf("compact decisions: %w", err)
		}
		buf.Write(append(b, '\n'))
	}
	tmp, err := os.CreateTemp(filepath.Dir(d.path), ".verify-decisions-*")
	if err != nil {
		return fmt.Errorf("compact decisions: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("compact decisions: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("compact decisions: %w", err)
	}
	if err := os.Rename(tmp.Name(), d.path); err != nil {
		return fmt.Errorf("compact decisions: %w", err)
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
