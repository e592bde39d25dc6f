package regcache

import "os"

// fileStat is what tells a content file from another: a file whose size,
// mtime, ctime (any write or utimes moves it, where the system has it) or
// identity (device and inode) changed is verified again before it is
// served.
type fileStat struct {
	size  int64
	mtime int64 // unix nanos
	ctime int64 // unix nanos; 0 where not known
	dev   uint64
	ino   uint64
}

func statOf(fi os.FileInfo) fileStat {
	st := fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ctime: changeTime(fi)}
	st.dev, st.ino = fileID(fi)
	return st
}
