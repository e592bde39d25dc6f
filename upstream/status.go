package upstream

import "time"

// Status is one upstream of one route as the runtime API shows it
// (GET /api/upstreams). In JSON, last_check is an RFC 3339 time and is
// omitted while the host has never been checked; last_error is "" when the
// last check passed or none has run.
type Status struct {
	Route             string    `json:"route"`
	Upstream          string    `json:"upstream"`
	State             State     `json:"state"`
	Healthy           bool      `json:"healthy"`
	ActiveConnections int64     `json:"active_connections"`
	LastCheck         time.Time `json:"last_check,omitzero"`
	LastError         string    `json:"last_error"`
}

// Status returns the state of every host, in configuration order.
func (p *Pool) Status() []Status {
	out := make([]Status, len(p.hosts))
	for i := range p.hosts {
		h := p.hosts[i].Load()
		s := h.snapshot()
		out[i] = Status{
			Route:             p.Route(),
			Upstream:          h.addr,
			State:             s.state,
			Healthy:           s.health.Up(),
			ActiveConnections: h.Active(),
			LastCheck:         s.lastCheck,
			LastError:         s.lastErr,
		}
	}
	return out
}
