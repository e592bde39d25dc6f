package gateway

import (
	"fmt"
	"syscall"
)

// Filesystems where no file can be created, whatever the mode bits say.
const (
	procSuperMagic  = 0x9fa0
	sysfsMagic      = 0x62656572
	stRDOnly        = 0x1 // ST_RDONLY in statfs(2) f_flags
	writableWantFix = "give a directory on a writable filesystem (systemd ReadWritePaths= when the unit has ProtectSystem=)"
)

// writableFS says why nothing can be created under dir, which exists,
// whoever asks (root passes access(2) on any mode): a read-only mount,
// /proc or /sys. nil when it can, or when the filesystem cannot be read.
func writableFS(dir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil
	}
	switch {
	case int64(st.Flags)&stRDOnly != 0:
		return fmt.Errorf("%s is on a read-only filesystem: %s", dir, writableWantFix)
	case int64(st.Type) == procSuperMagic || int64(st.Type) == sysfsMagic:
		return fmt.Errorf("%s is on /proc or /sys, where nothing can be created: %s", dir, writableWantFix)
	}
	return nil
}
