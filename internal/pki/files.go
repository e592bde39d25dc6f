package pki

import (
	"os"
	"path/filepath"
)

// WriteFiles writes name -> content under dir, ".key" files with mode 0600
// and the others 0644.
func WriteFiles(dir string, files map[string][]byte) error {
	for name, b := range files {
		mode := os.FileMode(0o644)
		if filepath.Ext(name) == ".key" {
			mode = 0o600
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, mode); err != nil {
			return err
		}
	}
	return nil
}
