package snigate

import (
	"errors"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/names"
)

// errNoAnswer is returned by build when no address is known to answer with.
var errNoAnswer = errors.New("no `answer` addresses in the stanza and no dns.answer in the config file: add `answer ADDRESS...` to the snigate stanza")

// build makes the answer policy from the stanza and, when cfg is not nil,
// the snigate configuration file: the routed names are the union of
// `names` and cfg.RoutedNames(); `answer` and `ttl` win over the file's
// dns.answer and dns.ttl (neither set: dnsresponder.DefaultTTL). It
// returns the number of name patterns too.
func (s settings) build(cfg *config.Config) (*dnsresponder.Policy, int, error) {
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
	return dnsresponder.NewPolicy(&routed, answer, ttl), routed.Len(), nil
}
