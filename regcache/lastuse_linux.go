package regcache

import (
	"os"
	"syscall"
)

// lastUse is when the file was last read or written, as far as the
// filesystem knows (atime follows relatime: it moves at least daily), so
// that the order of least recent use survives a restart roughly.
func lastUse(fi os.FileInfo) int64 {
	m := fi.ModTime().UnixNano()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return max(m, st.Atim.Nano())
	}
	return m
}

// changeTime is the file's ctime, which every write, chmod and utimes
// moves (so that an edit that puts the mtime back is still noticed).
func changeTime(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return 0
}
