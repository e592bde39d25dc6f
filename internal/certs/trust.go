package certs

import (
	"fmt"
	"path/filepath"
	"strings"
)

// InitCASummary is what `snigate ca init` prints after InitCA succeeded:
// the files written, what the CA may sign for, and trust(name, caPath),
// how nodes trust the CA, for each name (for a placeholder host when
// there are none); the caller gives nodeconfig.TrustInstructions, so that
// the recipe is node-config's own files.
func InitCASummary(dir string, names []string, trust func(host, caPath string) string) string {
	caPath := filepath.Join(dir, CACertFileName)
	if abs, err := filepath.Abs(caPath); err == nil {
		caPath = abs
	}
	names, _ = constraintNames(names)
	var b strings.Builder
	fmt.Fprintf(&b, "wrote %s (certificate, 0644) and %s (private key, 0600)\n",
		caPath, filepath.Join(filepath.Dir(caPath), CAKeyFileName))
	if len(names) == 0 {
		b.WriteString("the CA has no name constraints: it can sign for any name (use --name to restrict it)\n\n")
		b.WriteString(trust("REGISTRY", caPath))
		return b.String()
	}
	fmt.Fprintf(&b, "the CA is constrained to %s: snigate mints only for each name and exactly one label below it\n\n",
		strings.Join(names, ", "))
	for _, n := range names {
		b.WriteString(trust(n, caPath))
	}
	return b.String()
}
