package certs

import (
	"os"
	"time"
)

// fileID identifies one version of a file's contents cheaply, without
// reading it: the identity of the inode a path resolves to (symlinks
// followed) plus its size and times. A rename-over, a Kubernetes ..data
// swap and an in-place write each change it. The zero fileID stands for
// "could not stat" (a missing file), which is also a state to notice.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

// statID returns path's fileID, or the zero fileID when it cannot be
// stat'ed.
func statID(path string) fileID {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}
	}
	id := fileID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	sysID(fi, &id)
	return id
}

// pairID is the fileID of a certificate and of its key.
type pairID struct{ cert, key fileID }

func statPair(cert, key string) pairID {
	return pairID{cert: statID(cert), key: statID(key)}
}

// unixNano converts a seconds/nanoseconds pair as found in syscall.Stat_t.
func unixNano(sec, nsec int64) int64 { return time.Unix(sec, nsec).UnixNano() }
