//go:build unix

package regcache

import (
	"os"
	"syscall"
)

// fileID is the device and inode of fi.
func fileID(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino) //nolint:unconvert // Dev is int32 on some systems
	}
	return 0, 0
}
