package filewatch

import (
	"os"
	"time"
)

// ID identifies one version of a file's contents cheaply, without reading
// it: the identity of the inode a path resolves to (symlinks followed) plus
// its size and times. A rename-over, a Kubernetes ..data swap and an
// in-place write each change it. The zero ID stands for "could not stat"
// (a missing file), which is also a state to notice.
type ID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

// Stat returns path's ID, or the zero ID when it cannot be stat'ed.
func Stat(path string) ID {
	fi, err := os.Stat(path)
	if err != nil {
		return ID{}
	}
	return IDOf(fi)
}

// IDOf returns the ID of the file fi describes, as from (*os.File).Stat
// on a file already open.
func IDOf(fi os.FileInfo) ID {
	id := ID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	sysID(fi, &id)
	return id
}

// Size is the file's size in bytes when the ID was taken.
func (id ID) Size() int64 { return id.size }

// Missing reports whether the file could not be stat'ed.
func (id ID) Missing() bool { return id == ID{} }

// unixNano converts a seconds/nanoseconds pair as found in syscall.Stat_t.
func unixNano(sec, nsec int64) int64 { return time.Unix(sec, nsec).UnixNano() }
