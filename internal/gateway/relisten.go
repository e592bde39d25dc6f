package gateway

import (
	"net"

	"github.com/snigate/snigate/internal/config"
)

// listenerChange is what a reload does to the listeners: next are the
// listeners once it is in force, opened those of next it had to open (a
// new address), closing those it leaves out. An address written the same
// keeps its listener, with its connections and its accept queue.
type listenerChange struct {
	next, opened, closing *listeners
}

// relisten opens the listeners cfg has and cur lacks. Nothing is closed
// and nothing serves the new ones until apply; on an error, what it
// opened is closed and cur is untouched. A new address on a port cur
// already holds (":443" for "0.0.0.0:443") fails with "address already in
// use": use SIGUSR2 (an upgrade), which matches sockets by what they are
// bound to.
func (g *Gateway) relisten(cur *listeners, cfg *config.Config) (*listenerChange, error) {
	ch := &listenerChange{next: &listeners{}, opened: &listeners{}, closing: &listeners{}}
	if err := g.relistenTLS(ch, cur, cfg.Listen.TLS); err != nil {
		ch.opened.close()
		return nil, err
	}
	steps := []func(*listenerChange, *listeners, *config.Config) error{
		g.relistenConnect, g.relistenDNS, g.relistenAdmin,
	}
	for _, step := range steps {
		if err := step(ch, cur, cfg); err != nil {
			ch.opened.close()
			return nil, err
		}
	}
	return ch, nil
}

func (g *Gateway) relistenTLS(ch *listenerChange, cur *listeners, addrs []string) error {
	kept := make([]bool, len(cur.tls))
	for _, addr := range addrs {
		i := unkept(cur.tlsAddrs, kept, addr)
		var ln net.Listener
		if i >= 0 {
			kept[i], ln = true, cur.tls[i]
		} else {
			var err error
			if ln, err = g.listenTCP("listen.tls", addr); err != nil {
				return err
			}
			ch.opened.tls, ch.opened.tlsAddrs = append(ch.opened.tls, ln), append(ch.opened.tlsAddrs, addr)
		}
		ch.next.tls, ch.next.tlsAddrs = append(ch.next.tls, ln), append(ch.next.tlsAddrs, addr)
	}
	for i, ln := range cur.tls {
		if !kept[i] {
			ch.closing.tls, ch.closing.tlsAddrs = append(ch.closing.tls, ln), append(ch.closing.tlsAddrs, cur.tlsAddrs[i])
		}
	}
	return nil
}

// unkept is the index of addr in addrs not kept yet, or -1.
func unkept(addrs []string, kept []bool, addr string) int {
	for i, a := range addrs {
		if a == addr && !kept[i] {
			return i
		}
	}
	return -1
}

func (g *Gateway) relistenConnect(ch *listenerChange, cur *listeners, cfg *config.Config) error {
	addr := cfg.Listen.Connect
	if addr == cur.connectAddr {
		ch.next.connect, ch.next.connectAddr = cur.connect, addr
		return nil
	}
	ch.closing.connect, ch.closing.connectAddr = cur.connect, cur.connectAddr
	if addr == "" {
		return nil
	}
	ln, err := g.listenTCP("listen.connect", addr)
	if err != nil {
		return err
	}
	ch.opened.connect, ch.opened.connectAddr = ln, addr
	ch.next.connect, ch.next.connectAddr = ln, addr
	return nil
}

func (g *Gateway) relistenDNS(ch *listenerChange, cur *listeners, cfg *config.Config) error {
	addr := cfg.Listen.DNS
	if addr == cur.dnsAddr {
		ch.next.dnsUDP, ch.next.dnsTCP, ch.next.dnsAddr = cur.dnsUDP, cur.dnsTCP, addr
		return nil
	}
	ch.closing.dnsUDP, ch.closing.dnsTCP, ch.closing.dnsAddr = cur.dnsUDP, cur.dnsTCP, cur.dnsAddr
	if addr == "" {
		return nil
	}
	pc, ln, err := g.listenDNS(addr)
	if err != nil {
		return err
	}
	ch.opened.dnsUDP, ch.opened.dnsTCP, ch.opened.dnsAddr = pc, ln, addr
	ch.next.dnsUDP, ch.next.dnsTCP, ch.next.dnsAddr = pc, ln, addr
	return nil
}

func (g *Gateway) relistenAdmin(ch *listenerChange, cur *listeners, cfg *config.Config) error {
	addr := cfg.Listen.Admin
	if addr == cur.adminAddr {
		ch.next.admin, ch.next.adminAddr = cur.admin, addr
		return nil
	}
	ch.closing.admin, ch.closing.adminAddr = cur.admin, cur.adminAddr
	if addr == "" {
		return nil
	}
	ln, err := g.listenAdmin(addr)
	if err != nil {
		return err
	}
	ch.opened.admin, ch.opened.adminAddr = ln, addr
	ch.next.admin, ch.next.adminAddr = ln, addr
	return nil
}

// apply serves the opened listeners and closes the ones left out (their
// connections go on: only accepting stops). Called under reloadMu once
// the new generation is in force.
func (g *Gateway) apply(ch *listenerChange) {
	g.startServers(g.srv, ch.opened)
	g.logListenerChange(ch)
	ch.closing.close()
	g.ls = ch.next
	g.tlsBound.Store(new(ch.next.addrs().TLS))
	g.labels = ch.next.labels()
	g.metrics.initListeners(g.labels)
}

func (g *Gateway) logListenerChange(ch *listenerChange) {
	for _, a := range ch.closing.addrList() {
		g.log.Info("listener closed by the reload", "listener", a)
	}
	for _, a := range ch.opened.addrList() {
		g.log.Info("listener opened by the reload", "listener", a)
	}
}

// addrList is every listener's bound address, for the log.
func (ls *listeners) addrList() []string {
	var out []string
	for _, ln := range ls.tls {
		out = append(out, ln.Addr().String())
	}
	for _, ln := range []net.Listener{ls.connect, ls.dnsTCP, ls.admin} {
		if ln != nil {
			out = append(out, ln.Addr().String())
		}
	}
	if ls.dnsUDP != nil {
		out = append(out, "udp "+ls.dnsUDP.LocalAddr().String())
	}
	return out
}
