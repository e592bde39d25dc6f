//go:build unix

package regcache

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockDir opens path and takes an exclusive flock on it, which a second
// Cache on the same directory (in this process or another) cannot take.
// Closing the file releases it.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errors.Join(errLocked, err)
		}
		return nil, err
	}
	return f, nil
}
