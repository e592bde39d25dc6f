//go:build unix && !linux

package filewatch

import (
	"os"
	"syscall"
)

// sysID adds the device and inode; the change time's field differs between
// the BSDs, so size and modification time stand in for it.
func sysID(fi os.FileInfo, id *ID) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	id.dev, id.ino = uint64(st.Dev), uint64(st.Ino) //nolint:unconvert // the types differ between systems
}
