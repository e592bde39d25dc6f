package gateway

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"

	"github.com/snigate/snigate/internal/admin"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/handover"
	"github.com/snigate/snigate/sni"
)

// listeners are the sockets the gateway serves on, opened before anything
// is started so that a port in use fails the start at once. Each keeps the
// address the configuration gave it, which names it in a hand-over.
type listeners struct {
	tls         []net.Listener
	tlsAddrs    []string // cfg.Listen.TLS entry of each of tls
	connect     net.Listener
	connectAddr string
	dnsUDP      net.PacketConn
	dnsTCP      net.Listener
	dnsAddr     string
	admin       net.Listener
	adminAddr   string
}

// listen opens every listener of cfg, taking the sockets this process
// inherited (systemd socket activation, or a hand-over) where they match.
func (g *Gateway) listen(cfg *config.Config) (*listeners, error) {
	ls := &listeners{}
	fail := func(err error) (*listeners, error) {
		ls.close()
		return nil, err
	}
	for _, addr := range cfg.Listen.TLS {
		ln, err := g.listenTCP("listen.tls", addr)
		if err != nil {
			return fail(err)
		}
		ls.tls, ls.tlsAddrs = append(ls.tls, ln), append(ls.tlsAddrs, addr)
	}
	if cfg.Listen.Connect != "" {
		ln, err := g.listenTCP("listen.connect", cfg.Listen.Connect)
		if err != nil {
			return fail(err)
		}
		ls.connect, ls.connectAddr = ln, cfg.Listen.Connect
	}
	if cfg.Listen.DNS != "" {
		var err error
		if ls.dnsUDP, ls.dnsTCP, err = g.listenDNS(cfg.Listen.DNS); err != nil {
			return fail(err)
		}
		ls.dnsAddr = cfg.Listen.DNS
	}
	if cfg.Listen.Admin != "" {
		ln, err := g.listenAdmin(cfg.Listen.Admin)
		if err != nil {
			return fail(err)
		}
		ls.admin, ls.adminAddr = ln, cfg.Listen.Admin
	}
	return ls, nil
}

// listenTCP opens (or takes the inherited socket of) a TLS or CONNECT
// listener.
func (g *Gateway) listenTCP(key, addr string) (net.Listener, error) {
	ln, inherited, err := g.inherit.Listen(key, "tcp", addr, func() (net.Listener, error) {
		return sni.Listen("tcp", addr)
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", key, addr, err)
	}
	g.logInherited(inherited, key, ln.Addr())
	return sni.WrapListener(ln), nil
}

func (g *Gateway) listenAdmin(addr string) (net.Listener, error) {
	network, where := "tcp", addr
	if path, ok := strings.CutPrefix(addr, admin.UnixPrefix); ok {
		network, where = "unix", path
	}
	ln, inherited, err := g.inherit.Listen("listen.admin", network, where, func() (net.Listener, error) {
		return admin.Listen(addr)
	})
	if err != nil {
		return nil, fmt.Errorf("listen.admin %s: %w", addr, err)
	}
	g.logInherited(inherited, "listen.admin", ln.Addr())
	if !admin.IsLoopbackAddr(addr) {
		g.log.Warn(adminWarningText, "listener", addr)
	}
	return ln, nil
}

func (g *Gateway) logInherited(inherited bool, key string, addr net.Addr) {
	if inherited {
		g.log.Info("listening socket inherited", "key", key, "listener", addr.String(), "from", g.inherit.Source())
	}
}

// tlsPorts are the ports the TLS listeners are bound to: the ports a
// CONNECT request may name.
func (ls *listeners) tlsPorts() []int {
	var ports []int
	for _, ln := range ls.tls {
		if a, ok := ln.Addr().(*net.TCPAddr); ok && !slices.Contains(ports, a.Port) {
			ports = append(ports, a.Port)
		}
	}
	return ports
}

// listenDNS binds UDP and TCP on the same port, taking inherited sockets
// where they match. With port 0 the TCP listener takes the port the kernel
// gave UDP; if that TCP port is taken, another port is tried.
func (g *Gateway) listenDNS(addr string) (net.PacketConn, net.Listener, error) {
	host, port, _ := net.SplitHostPort(addr)
	attempts := 1
	if port == "0" {
		attempts = 20
	}
	var err error
	for range attempts {
		pc, inherited, uerr := g.inherit.ListenPacket("listen.dns", "udp", addr, func() (net.PacketConn, error) {
			return net.ListenPacket("udp", addr)
		})
		if uerr != nil {
			return nil, nil, fmt.Errorf("listen.dns %s (udp): %w", addr, uerr)
		}
		g.logInherited(inherited, "listen.dns", pc.LocalAddr())
		_, bound, _ := net.SplitHostPort(pc.LocalAddr().String())
		ln, inherited, terr := g.inherit.Listen("listen.dns", "tcp", addr, func() (net.Listener, error) {
			return net.Listen("tcp", net.JoinHostPort(host, bound))
		})
		if terr == nil {
			g.logInherited(inherited, "listen.dns", ln.Addr())
			return pc, ln, nil
		}
		pc.Close()
		err = fmt.Errorf("listen.dns %s (tcp): %w", addr, terr)
	}
	return nil, nil, err
}

func (ls *listeners) addrs() Addrs {
	var a Addrs
	for _, ln := range ls.tls {
		a.TLS = append(a.TLS, ln.Addr())
	}
	if ls.connect != nil {
		a.Connect = ls.connect.Addr()
	}
	if ls.dnsUDP != nil {
		a.DNS = ls.dnsUDP.LocalAddr()
	}
	if ls.admin != nil {
		a.Admin = ls.admin.Addr()
	}
	return a
}

// namedSocket is one of the listeners with the configuration key and the
// address that name it in a hand-over.
type namedSocket struct {
	key, addr string
	conn      any // a net.Listener or net.PacketConn
}

func (n namedSocket) name() string { return handover.Name(n.key, n.addr) }

// all lists every listener, in the order a hand-over passes them.
func (ls *listeners) all() []namedSocket {
	var out []namedSocket
	for i, ln := range ls.tls {
		out = append(out, namedSocket{"listen.tls", ls.tlsAddrs[i], ln})
	}
	if ls.connect != nil {
		out = append(out, namedSocket{"listen.connect", ls.connectAddr, ls.connect})
	}
	if ls.dnsUDP != nil {
		out = append(out, namedSocket{"listen.dns", ls.dnsAddr, ls.dnsUDP}, namedSocket{"listen.dns", ls.dnsAddr, ls.dnsTCP})
	}
	if ls.admin != nil {
		out = append(out, namedSocket{"listen.admin", ls.adminAddr, ls.admin})
	}
	return out
}

// sockets duplicates every listener's descriptor for a hand-over, each
// named by its configuration key and address. The caller closes the
// files (handover.Spawn does). The duplicates never put the sockets into
// blocking mode (handover.DupSocket; a listener's File() would, once
// os.StartProcess calls its Fd()).
func (ls *listeners) sockets() ([]handover.Socket, error) {
	var out []handover.Socket
	var errs []error
	for _, n := range ls.all() {
		c, ok := n.conn.(syscall.Conn)
		if !ok {
			errs = append(errs, fmt.Errorf("%s %s: a %T cannot be handed over", n.key, n.addr, n.conn))
			continue
		}
		file, err := handover.DupSocket(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", n.key, n.addr, err))
			continue
		}
		out = append(out, handover.Socket{Name: n.name(), File: file})
	}
	if err := errors.Join(errs...); err != nil {
		for _, s := range out {
			s.File.Close()
		}
		return nil, err
	}
	return out, nil
}

// keepUnixSocketFiles makes closing the admin unix listener leave its
// socket file, which the process it was handed to serves now.
func (ls *listeners) keepUnixSocketFiles() {
	switch u := ls.admin.(type) {
	case interface{ KeepSocketFile() }: // admin.Listen's
		u.KeepSocketFile()
	case *net.UnixListener: // inherited
		u.SetUnlinkOnClose(false)
	}
}

func (ls *listeners) close() error {
	var errs []error
	for _, ln := range ls.tls {
		errs = append(errs, ln.Close())
	}
	if ls.connect != nil {
		errs = append(errs, ls.connect.Close())
	}
	if ls.dnsUDP != nil {
		errs = append(errs, ls.dnsUDP.Close(), ls.dnsTCP.Close())
	}
	if ls.admin != nil {
		errs = append(errs, ls.admin.Close())
	}
	return errors.Join(errs...)
}
