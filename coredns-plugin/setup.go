package snigate

import (
	"fmt"
	"math"
	"net/netip"
	"path/filepath"
	"strconv"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/names"
)

// pluginName is the directive, the package and Name() of the handler.
const pluginName = "snigate"

// DefaultReload is how often the file named by `config` is checked for
// changes when the stanza has no `reload`.
const DefaultReload = 5 * time.Second

// maxTTL is the largest TTL RFC 2181 allows (2^31 - 1 seconds).
const maxTTL = math.MaxInt32

func init() { plugin.Register(pluginName, setup) }

// settings is one snigate stanza, as written in the Corefile.
type settings struct {
	origins    []string      // zones the plugin answers in: its arguments, else the server block's
	answer     []netip.Addr  // `answer`: empty means dns.answer from the config file
	ttl        time.Duration // `ttl`: meaningful only when ttlSet
	ttlSet     bool
	names      []string       // `names`: routed names in addition to the config file's
	configPath string         // `config`: "" means no file
	reload     time.Duration  // `reload`: 0 disables watching the config file
	fall       fall.F         // `fallthrough`: accepted; see README, Syntax
	line       int            // line of the snigate directive, for errors found after the block
	configLine int            // line of `config`, for errors loading the file
	check      *checkSettings // `answer_check`; nil: the file's dns.answer_check, if any
}

func setup(c *caddy.Controller) error {
	s, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	h, err := newHandler(s, NewMetrics(prometheus.DefaultRegisterer), clog.NewWithPlugin(pluginName))
	if err != nil {
		return plugin.Error(pluginName, lineErr(c, s.errLine(), err.Error()))
	}
	c.OnStartup(h.OnStartup)
	c.OnShutdown(h.OnShutdown)
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		h.Next = next
		return h
	})
	return nil
}

// parse reads one snigate stanza. Every error names the Corefile line.
func parse(c *caddy.Controller) (settings, error) {
	s := settings{reload: DefaultReload}
	for i := 0; c.Next(); i++ {
		if i > 0 {
			return s, plugin.ErrOnce
		}
		s.line = c.Line()
		s.origins = plugin.OriginsFromArgsOrServerBlock(c.RemainingArgs(), c.ServerBlockKeys)
		if len(s.origins) == 0 {
			s.origins = []string{"."}
		}
		for c.NextBlock() {
			if err := s.property(c); err != nil {
				return s, err
			}
		}
	}
	if len(s.answer) == 0 && s.configPath == "" {
		return s, lineErr(c, s.line, "no `answer` addresses: add `answer ADDRESS...` (or `config FILE` whose dns.answer is set)")
	}
	if len(s.names) == 0 && s.configPath == "" {
		return s, lineErr(c, s.line, "no routed names: add `names NAME...` or `config FILE`")
	}
	return s, nil
}

// property parses the block line under the cursor.
func (s *settings) property(c *caddy.Controller) error {
	switch c.Val() {
	case "answer":
		return s.parseAnswer(c)
	case "ttl":
		return s.parseTTL(c)
	case "names":
		return s.parseNames(c)
	case "config":
		return s.parseConfig(c)
	case "reload":
		return s.parseReload(c)
	case "fallthrough":
		s.fall.SetZonesFromArgs(c.RemainingArgs())
		return nil
	case "answer_check":
		return s.parseAnswerCheck(c)
	default:
		return c.Errf("unknown property '%s': want answer, ttl, names, config, reload, answer_check or fallthrough", c.Val())
	}
}

func (s *settings) parseAnswer(c *caddy.Controller) error {
	args := c.RemainingArgs()
	if len(args) == 0 {
		return c.ArgErr()
	}
	for _, a := range args {
		addr, err := netip.ParseAddr(a)
		if err != nil || addr.Zone() != "" {
			return c.Errf("answer: want an IPv4 or IPv6 address such as 192.0.2.10 or 2001:db8::10, got '%s'", a)
		}
		s.answer = append(s.answer, addr.Unmap())
	}
	return nil
}

func (s *settings) parseTTL(c *caddy.Controller) error {
	args := c.RemainingArgs()
	if len(args) != 1 {
		return c.ArgErr()
	}
	n, err := strconv.ParseUint(args[0], 10, 32)
	if err != nil || n < 1 || n > maxTTL {
		return c.Errf("ttl: want a number of seconds from 1 to %d, such as 30, got '%s'", maxTTL, args[0])
	}
	s.ttl, s.ttlSet = time.Duration(n)*time.Second, true
	return nil
}

func (s *settings) parseNames(c *caddy.Controller) error {
	args := c.RemainingArgs()
	if len(args) == 0 {
		return c.ArgErr()
	}
	for _, n := range args {
		if err := names.CheckPattern(n); err != nil {
			return c.Errf("names: %q: %v", n, err)
		}
	}
	s.names = append(s.names, args...)
	return nil
}

func (s *settings) parseConfig(c *caddy.Controller) error {
	args := c.RemainingArgs()
	if len(args) != 1 {
		return c.ArgErr()
	}
	if s.configPath != "" {
		return c.Errf("config: given twice; one snigate configuration file per stanza")
	}
	s.configPath, s.configLine = args[0], c.Line()
	if root := dnsserver.GetConfig(c).Root; !filepath.IsAbs(s.configPath) && root != "" {
		s.configPath = filepath.Join(root, s.configPath)
	}
	return nil
}

func (s *settings) parseReload(c *caddy.Controller) error {
	args := c.RemainingArgs()
	if len(args) != 1 {
		return c.ArgErr()
	}
	d, err := time.ParseDuration(args[0])
	if err != nil || d < 0 {
		return c.Errf("reload: want a duration such as 5s (0 disables re-reading), got '%s'", args[0])
	}
	s.reload = d
	return nil
}

// errLine is the Corefile line to blame for a stanza whose policy cannot be
// built: `config` when there is a file (it is either unreadable or lacks
// dns.answer), else the snigate directive.
func (s settings) errLine() int {
	if s.configPath != "" {
		return s.configLine
	}
	return s.line
}

// lineErr is an error about the stanza as a whole, reported at line (the
// snigate directive), in the format caddy uses for its own parse errors.
func lineErr(c *caddy.Controller, line int, msg string) error {
	return fmt.Errorf("%s:%d - Error during parsing: %s", c.File(), line, msg)
}
