package gateway

import (
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/snigate/snigate/internal/admin"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/sni"
)

// listeners are the sockets the gateway serves on, opened before anything
// is started so that a port in use fails the start at once.
type listeners struct {
	tls     []net.Listener
	connect net.Listener
	dnsUDP  net.PacketConn
	dnsTCP  net.Listener
	admin   net.Listener
}

func (g *Gateway) listen(cfg *config.Config) (*listeners, error) {
	ls := &listeners{}
	fail := func(err error) (*listeners, error) {
		ls.close()
		return nil, err
	}
	for _, addr := range cfg.Listen.TLS {
		ln, err := sni.Listen("tcp", addr)
		if err != nil {
			return fail(fmt.Errorf("listen.tls %s: %w", addr, err))
		}
		ls.tls = append(ls.tls, ln)
	}
	if cfg.Listen.Connect != "" {
		ln, err := sni.Listen("tcp", cfg.Listen.Connect)
		if err != nil {
			return fail(fmt.Errorf("listen.connect %s: %w", cfg.Listen.Connect, err))
		}
		ls.connect = ln
	}
	if cfg.Listen.DNS != "" {
		var err error
		if ls.dnsUDP, ls.dnsTCP, err = listenDNS(cfg.Listen.DNS); err != nil {
			return fail(err)
		}
	}
	if cfg.Listen.Admin != "" {
		ln, err := admin.Listen(cfg.Listen.Admin)
		if err != nil {
			return fail(fmt.Errorf("listen.admin %s: %w", cfg.Listen.Admin, err))
		}
		ls.admin = ln
		if !admin.IsLoopbackAddr(cfg.Listen.Admin) {
			g.log.Warn("the admin API is unauthenticated and listens on a non-loopback address; restrict who can reach it (firewall, NetworkPolicy) or use 127.0.0.1 or unix:/run/snigate/admin.sock",
				"listener", cfg.Listen.Admin)
		}
	}
	return ls, nil
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

// listenDNS binds UDP and TCP on the same port. With port 0 the TCP
// listener takes the port the kernel gave UDP; if that TCP port is taken,
// another port is tried.
func listenDNS(addr string) (net.PacketConn, net.Listener, error) {
	host, port, _ := net.SplitHostPort(addr)
	attempts := 1
	if port == "0" {
		attempts = 20
	}
	var err error
	for range attempts {
		var pc net.PacketConn
		if pc, err = net.ListenPacket("udp", addr); err != nil {
			return nil, nil, fmt.Errorf("listen.dns %s (udp): %w", addr, err)
		}
		_, bound, _ := net.SplitHostPort(pc.LocalAddr().String())
		ln, terr := net.Listen("tcp", net.JoinHostPort(host, bound))
		if terr == nil {
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
