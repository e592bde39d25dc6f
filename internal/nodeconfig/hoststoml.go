package nodeconfig

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// hostsTOML is containerd's hosts.toml for h: the server is the registry
// name itself (DNS sends it to the gateway), trusting the gateway's CA
// and, when the route asks for node identity, presenting the node's
// client certificate. Paths without a leading "/" are relative to the
// file's own directory, as containerd resolves them.
//
// The same settings are written twice, as what every containerd version
// reads: in a [host."https://<h>"] table, which containerd 1.6 requires
// (a file without one is refused as "invalid host tree", and the pull
// goes to the registry name with no CA and no client certificate), and at
// the top level, which is the entry containerd always appends after the
// tables, so that a retry there is the same gateway with the same trust.
func hostsTOML(c Config, h Host) []byte {
	return append(hostsHeader(c, h), hostTable(c, h)...)
}

// HostsTOML is the hosts.toml node-config writes for h, for a recipe that
// installs it by hand (`snigate ca init`'s printout, deploy/node): the CA
// file beside it is CAFile when h.CA is set.
func HostsTOML(c Config, h Host) []byte { return hostsTOML(c, h) }

// hostsHeader is the comment line and the top-level keys of hostsTOML.
func hostsHeader(c Config, h Host) []byte {
	var b bytes.Buffer
	b.WriteString(ownComment + " " + h.Registry() + " through the gateway")
	if h.Route != "" {
		fmt.Fprintf(&b, " (route %s)", h.Route)
	}
	fmt.Fprintf(&b, "\nserver = %s\n", strconv.Quote(h.url()))
	b.WriteString(ownKeys(c, h, ""))
	return b.Bytes()
}

// hostTable is h's [host."https://<h>"] table, ca and client first (where
// a merge puts them back), then capabilities.
func hostTable(c Config, h Host) string {
	return fmt.Sprintf("\n[host.%s]\n%s  capabilities = [\"pull\", \"resolve\"]\n", strconv.Quote(h.url()), ownKeys(c, h, "  "))
}

// url is the registry's https URL as containerd's server key names it.
func (h Host) url() string { return "https://" + h.Registry() }

// ownKeys are the key lines snigate sets for the server, each after
// indent: ca and client.
func ownKeys(c Config, h Host, indent string) string {
	var b strings.Builder
	if h.CA != nil {
		fmt.Fprintf(&b, "%sca = %s\n", indent, strconv.Quote(CAFile))
	}
	if c.wantsClient(h) {
		if c.ClientKey == "" {
			fmt.Fprintf(&b, "%sclient = %s\n", indent, strconv.Quote(c.clientCert()))
		} else {
			fmt.Fprintf(&b, "%sclient = [[%s, %s]]\n", indent, strconv.Quote(c.clientCert()), strconv.Quote(c.ClientKey))
		}
	}
	return b.String()
}

// serverKeys are the top-level keys snigate owns in hosts.toml; every
// other key and table of an existing file is kept as it is.
var serverKeys = map[string]bool{"server": true, "ca": true, "client": true}

// mergeHostsTOML returns old with snigate's settings for h: its top-level
// server, ca and client replaced, and the ca and client of a
// [host."<h's url>"] table replaced too, or that table added at the end
// (after every mirror) when old has none. Everything else (the mirror
// entries another tool wrote, in their order, which is the order
// containerd tries them; comments; other keys) is kept byte for byte.
// The go-toml parser gives each expression's exact place in old, so the
// file is edited in place rather than decoded and re-encoded, which would
// lose the order of the mirrors and every comment.
func mergeHostsTOML(old []byte, c Config, h Host) ([]byte, error) {
	old = dropOwnComments(old)
	cuts, err := plan(old, "host."+h.url())
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Write(hostsHeader(c, h))
	last, own := 0, false
	for _, s := range cuts {
		out.Write(old[last:s.from])
		last = s.to
		if s.insert {
			// the own host table's header ends here: our keys follow it
			out.WriteString(ownKeys(c, h, "  "))
			own = true
		}
	}
	out.Write(old[last:])
	if !own {
		if b := out.Bytes(); b[len(b)-1] != '\n' {
			out.WriteByte('\n')
		}
		out.WriteString(hostTable(c, h))
	}
	if err := toml.Unmarshal(out.Bytes(), &map[string]any{}); err != nil {
		return nil, fmt.Errorf("merged hosts.toml does not parse (a bug, please report it): %w", err)
	}
	return out.Bytes(), nil
}

// ownComment starts the comment line hostsTOML writes; a merge drops the
// old one, so that merging twice gives the same file.
const ownComment = "# snigate node-config:"

func dropOwnComments(b []byte) []byte {
	var out []byte
	for rest := b; len(rest) > 0; {
		line := rest[:lineEnd(rest, 0)]
		rest = rest[len(line):]
		if !bytes.HasPrefix(line, []byte(ownComment)) {
			out = append(out, line...)
		}
	}
	return out
}

// span is a byte range [from, to) of a file to drop; insert marks the
// empty span after a header where snigate's keys go.
type span struct {
	from, to int
	insert   bool
}

// plan finds, in old, the whole lines to drop (snigate's keys at the top
// and in table own) and the place after own's header where its keys go,
// in the order of the file.
func plan(old []byte, own string) ([]span, error) {
	var cuts []span
	p := unstable.Parser{}
	p.Reset(old)
	table := ""
	for p.NextExpression() {
		e := p.Expression()
		key := joinKey(e)
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = key
			if key == own {
				at := lineEnd(old, keyOffset(e))
				cuts = append(cuts, span{from: at, to: at, insert: true})
			}
		case unstable.KeyValue:
			if (table == "" && serverKeys[key]) || (table == own && (key == "ca" || key == "client")) {
				r := e.Raw
				cuts = append(cuts, span{from: lineStart(old, int(r.Offset)), to: lineEnd(old, int(r.Offset+r.Length))})
			}
		}
	}
	if err := p.Error(); err != nil {
		return nil, parseError(old, err)
	}
	return cuts, nil
}

// joinKey is the dotted key of a table header or key/value, unquoted.
func joinKey(e *unstable.Node) string {
	var parts []string
	for it := e.Key(); it.Next(); {
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, ".")
}

// keyOffset is where the first key part of e starts in the file.
func keyOffset(e *unstable.Node) int {
	it := e.Key()
	it.Next()
	return int(it.Node().Raw.Offset)
}

func lineStart(b []byte, i int) int { return bytes.LastIndexByte(b[:i], '\n') + 1 }

// lineEnd is the offset just past the newline that ends the line holding
// i (or len(b)).
func lineEnd(b []byte, i int) int {
	if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(b)
}

// parseError names the line of a TOML syntax error.
func parseError(b []byte, err error) error {
	var perr *unstable.ParserError
	if errors.As(err, &perr) && len(perr.Highlight) > 0 {
		off := cap(b) - cap(perr.Highlight)
		if off >= 0 && off <= len(b) {
			line := bytes.Count(b[:off], []byte("\n")) + 1
			return fmt.Errorf("line %d: %s", line, perr.Message)
		}
	}
	return err
}
