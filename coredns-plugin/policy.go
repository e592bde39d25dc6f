package snigate

import (
	"errors"
	"net/netip"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/names"
)

// errNoAnswer is returned by build when no address is known to answer with.
var errNoAnswer = errors.New("no `answer` addresses in the stanza and no dns.answer in the config file: add `answer ADDRESS...` to the snigate stanza")

// builder builds a stanza's policies: at setup, and again after each
// change of the config file. The answer check, when there is one, is
// built with the first policy and kept: its addresses are those of the
// first load (a changed dns.answer is checked after CoreDNS restarts or
// reloads its Corefile).
type builder struct {
	s       settings
	metrics *Metrics
	log     logger
	check   *dnsresponder.AnswerCheck // nil: no answer_check
	built   bool                      // the first policy was built: no check is made after it
	warned  bool                      // the late answer_check was logged
}

// build makes the answer policy from the stanza and, when cfg is not nil,
// the snigate configuration file: the routed names are the union of
// `names` and cfg.RoutedNames(); `answer` and `ttl` win over the file's
// dns.answer and dns.ttl (neither set: dnsresponder.DefaultTTL), and
// `answer_check` over dns.answer_check. It returns the number of name
// patterns too.
func (b *builder) build(cfg *config.Config) (*dnsresponder.Policy, int, error) {
	s := b.s
	var routed names.Table[struct{}]
	patterns := s.names
	if cfg != nil {
		patterns = append(patterns[:len(patterns):len(patterns)], cfg.RoutedNames()...)
	}
	for _, n := range patterns {
		// A name in both the stanza and the file, or twice in the stanza,
		// is routed once. Both lists were checked (parseNames, config).
		if err := routed.Add(n, struct{}{}); err != nil && !errors.Is(err, names.ErrDuplicate) {
			return nil, 0, err
		}
	}
	answer, ttl := s.answer, s.ttl
	if cfg != nil {
		if len(answer) == 0 {
			answer = cfg.DNS.Answer
		}
		if !s.ttlSet {
			ttl = cfg.DNS.TTL
		}
	}
	if len(answer) == 0 {
		return nil, 0, errNoAnswer
	}
	check, err := b.answerCheck(cfg, answer, patterns)
	if err != nil {
		return nil, 0, err
	}
	if check != nil {
		return dnsresponder.NewCheckedPolicy(&routed, check, ttl), routed.Len(), nil
	}
	return dnsresponder.NewPolicy(&routed, answer, ttl), routed.Len(), nil
}

// answerCheck is the stanza's check: built at the first build that has
// settings for one (the stanza's `answer_check`, else the file's
// dns.answer_check), then the same one.
func (b *builder) answerCheck(cfg *config.Config, answer []netip.Addr, patterns []string) (*dnsresponder.AnswerCheck, error) {
	if b.check != nil {
		return b.check, nil
	}
	cs := b.s.check
	if cs == nil && cfg != nil && cfg.DNS.AnswerCheck != nil {
		cs = checkFromFile(cfg.DNS.AnswerCheck)
	}
	first := !b.built
	b.built = true
	if !first { // OnStartup has run (or will run) without a check
		if cs != nil && !b.warned {
			b.warned = true
			b.log.Warningf("config: dns.answer_check was added to the file after start; it applies when CoreDNS restarts or reloads its Corefile")
		}
		return nil, nil
	}
	if cfg != nil && len(cfg.RoutedNames()) > 0 {
		patterns = cfg.RoutedNames() // names the gateways route: the file's first
	}
	if cs == nil || len(patterns) == 0 {
		return nil, nil
	}
	c, err := newAnswerCheck(cs, answer, patterns[0], b.metrics, b.log)
	if err != nil {
		return nil, err
	}
	b.check = c
	return c, nil
}
