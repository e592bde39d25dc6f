package regcache

import (
	"container/list"
	"github.com/snigate/snigate/internal/filewatch"
	"net/http"
)

// record is one stored digest. Its fields are guarded by Cache.mu.
type record struct {
	d    digest
	size int64
	// stat is the content file as it was when last verified, or as Open
	// found it; a file whose size, mtime, ctime or identity (device and
	// inode) differs is verified again.
	stat     filewatch.ID
	verified bool
	header   http.Header   // loaded with verification
	verify   chan struct{} // closed when the verification in progress ends; nil when none
	lastUse  int64         // unix nanos, for ordering at Open
	elem     *list.Element
}

// index holds the stored records in least-recently-used order. It is
// guarded by Cache.mu.
type index struct {
	byDigest map[string]*record
	lru      *list.List // front: most recently used
	bytes    int64
}

func newIndex() index {
	return index{byDigest: map[string]*record{}, lru: list.New()}
}

func (x *index) get(d digest) *record { return x.byDigest[d.hex] }

func (x *index) len() int { return len(x.byDigest) }

// add inserts r as the most recently used, replacing a record of the
// same digest.
func (x *index) add(r *record) {
	if old := x.get(r.d); old != nil {
		x.remove(old)
	}
	x.byDigest[r.d.hex] = r
	r.elem = x.lru.PushFront(r)
	x.bytes += r.size
}

// remove deletes r; it reports whether r was there.
func (x *index) remove(r *record) bool {
	if x.byDigest[r.d.hex] != r {
		return false
	}
	delete(x.byDigest, r.d.hex)
	x.lru.Remove(r.elem)
	x.bytes -= r.size
	return true
}

// touch marks r as the most recently used.
func (x *index) touch(r *record) {
	if x.byDigest[r.d.hex] == r {
		x.lru.MoveToFront(r.elem)
	}
}

// all returns every record (for PurgeAll).
func (x *index) all() []*record {
	rs := make([]*record, 0, len(x.byDigest))
	for e := x.lru.Front(); e != nil; e = e.Next() {
		rs = append(rs, e.Value.(*record))
	}
	return rs
}
