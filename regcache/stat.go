package regcache

import "os"

// fileStat is what tells a content file from another: a file whose size,
// mtime or identity (device and inode) changed is verified again before
// it is served.
type fileStat struct {
	size  int64
	mtime int64 // unix nanos
	dev   uint64
	ino   uint64
}

func statOf(fi os.FileInfo) fileStat {
	st := fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	st.dev, st.ino = fileID(fi)
	return st
}
