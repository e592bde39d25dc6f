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
