//go:build linux

package filewatch

import (
	"os"
	"syscall"
)

// sysID adds the device, inode and change time that Linux reports.
func sysID(fi os.FileInfo, id *ID) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	id.dev, id.ino = uint64(st.Dev), uint64(st.Ino)
	id.ctime = unixNano(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)) // int32 on 32-bit Linux
}
