package dnsresponder

import "net/netip"

// TakeBack undoes LeaveOut for addrs: they are answered again as the
// checks find them. A gateway whose readiness switch (POST /api/ready) is
// turned on again calls it with its own addresses.
func (c *AnswerCheck) TakeBack(addrs []netip.Addr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range addrs {
		if h := c.host(a.Unmap()); h != nil && c.leftOut[h.addr] {
			delete(c.leftOut, h.addr)
			c.log.Info("dns: own answer address answered again: the gateway is ready", "address", h.addr.String())
		}
	}
	c.publishLocked()
}
