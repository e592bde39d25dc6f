package regcache

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate reserves size bytes of disk for f without changing its size,
// so that a full disk shows before the first byte is served, not in the
// middle of a download. Filesystems without fallocate skip it.
func allocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return nil
	}
	return err
}
