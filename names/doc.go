// Package names holds snigate's one set of rules for server names: what a
// valid DNS host name is, its canonical form, what a route pattern is (an
// exact name, or "*." and a name: a wildcard matching exactly one label,
// as in certificates), and how a name matches a pattern. The
// configuration, the SNI router, the certificate minter, the DNS
// responder and the CoreDNS plugin all call it, so that a name one of
// them accepts is a name every other one accepts. It imports nothing of
// snigate's.
//
// A host name is 1..253 bytes (without the trailing dot) of labels of
// 1..63 letters, digits and hyphens, no label starting or ending with a
// hyphen, and it is not an IP address (nor ends in an all-digit label,
// which reads as one). Case does not matter and one trailing dot is
// ignored: Canonical lowers ASCII letters and drops it.
//
// Usage:
//
//	if err := names.CheckPattern(s); err != nil {
//		return fmt.Errorf("sni %q: %w", s, err) // says what to change
//	}
//	var t names.Table[*Route]
//	if err := t.Add("*.registry.example.com", r); err != nil { ... }
//	r, ok := t.Lookup(hello.ServerName) // false for an invalid name
//
// The zero Table is empty and ready; build it once, then share it
// read-only.
package names
