package regcache

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestTagsRememberedAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	b := newBlob(100, 1)
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	c := openTest(t, dir, 1<<20)
	if err := c.RememberTag("team/app", "v1", b.digest, at); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c2 := openTest(t, dir, 1<<20)
	got, ok := c2.LookupTag("team/app", "v1")
	if !ok || got.Digest != b.digest || !got.Confirmed.Equal(at) {
		t.Fatalf("after a restart: LookupTag = %+v, %v; want %s confirmed at %s", got, ok, b.digest, at)
	}
}

func TestTagsFileWrittenOnNewDigestAndAtMostEveryInterval(t *testing.T) {
	dir := t.TempDir()
	b1, b2 := newBlob(10, 1), newBlob(10, 2)
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	c := openTest(t, dir, 1<<20)
	tests := []struct {
		name      string
		digest    string
		at        time.Time
		wantSaved time.Time // the confirmation the file holds after the call
	}{
		{name: "new tag written", digest: b1.digest, at: at, wantSaved: at},
		{name: "same digest soon after: memory only", digest: b1.digest, at: at.Add(time.Second), wantSaved: at},
		{name: "same digest after the interval: written", digest: b1.digest, at: at.Add(TagSaveInterval + time.Second), wantSaved: at.Add(TagSaveInterval + time.Second)},
		{name: "new digest: written at once", digest: b2.digest, at: at.Add(TagSaveInterval + 2*time.Second), wantSaved: at.Add(TagSaveInterval + 2*time.Second)},
		{name: "new digest within TagSaveMinInterval: waits", digest: b1.digest, at: at.Add(TagSaveInterval + 2*time.Second + time.Millisecond), wantSaved: at.Add(TagSaveInterval + 2*time.Second)},
		{name: "the next confirmation writes what waited", digest: b1.digest, at: at.Add(TagSaveInterval + 3*time.Second), wantSaved: at.Add(TagSaveInterval + 3*time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.RememberTag("team/app", "v1", tc.digest, tc.at); err != nil {
				t.Fatal(err)
			}
			c.tags.mu.Lock()
			c.tags.m = nil // read the file back as a restart would
			c.tags.mu.Unlock()
			c.loadTags()
			got, _ := c.LookupTag("team/app", "v1")
			if !got.Confirmed.Equal(tc.wantSaved) {
				t.Fatalf("file holds confirmation %s, want %s", got.Confirmed, tc.wantSaved)
			}
			c.RememberTag("team/app", "v1", tc.digest, tc.at) // memory as it was
		})
	}
}

func TestTagsBoundedToMaxTags(t *testing.T) {
	c := openTest(t, "", 1<<20)
	b := newBlob(10, 1)
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	c.tags.m = map[tagKey]Tag{}
	for i := range MaxTags {
		c.tags.m[tagKey{"team/app", fmt.Sprint("t", i)}] = Tag{Repository: "team/app", Tag: fmt.Sprint("t", i), Digest: b.digest, Confirmed: at.Add(time.Duration(i) * time.Second)}
	}
	if err := c.RememberTag("team/app", "newest", b.digest, at.Add(time.Hour*24)); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Tags()); n != MaxTags {
		t.Fatalf("%d tags remembered, want MaxTags %d", n, MaxTags)
	}
	if _, ok := c.LookupTag("team/app", "t0"); ok {
		t.Fatal("the tag confirmed longest ago is still remembered beyond MaxTags")
	}
	if _, ok := c.LookupTag("team/app", "newest"); !ok {
		t.Fatal("the newest tag is not remembered")
	}
}

func TestTagsCorruptFileIgnored(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, tagsName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := openTest(t, dir, 1<<20)
	if n := len(c.Tags()); n != 0 {
		t.Fatalf("%d tags from a corrupt file, want 0", n)
	}
	b := newBlob(10, 1)
	if err := c.RememberTag("a", "b", b.digest, time.Now()); err != nil {
		t.Fatalf("a corrupt file is not replaced: %v", err)
	}
}

// TestTagsWrittenAtClose: a confirmation that waited (TagSaveMinInterval)
// is written when the cache closes.
func TestTagsWrittenAtClose(t *testing.T) {
	dir := t.TempDir()
	b1, b2 := newBlob(10, 1), newBlob(10, 2)
	at := time.Now()
	c := openTest(t, dir, 1<<20)
	if err := c.RememberTag("team/app", "v1", b1.digest, at); err != nil {
		t.Fatal(err)
	}
	if err := c.RememberTag("team/app", "v2", b2.digest, at.Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c2 := openTest(t, dir, 1<<20)
	if got, ok := c2.LookupTag("team/app", "v2"); !ok || got.Digest != b2.digest {
		t.Fatalf("after Close and Open: %+v %v; want v2 written at Close", got, ok)
	}
}
