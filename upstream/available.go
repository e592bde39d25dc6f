package upstream

// Available reports whether Candidates would return at least one host,
// without advancing the round-robin rotation: a caller that decides
// early whether a connection can be served asks it, then calls
// Candidates once when it dials.
func (p *Pool) Available() bool {
	for i := range p.hosts {
		if p.hosts[i].Load().usable.Load() {
			return true
		}
	}
	return false
}
