package httpverify

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/snigate/snigate/internal/ratelog"
	"github.com/snigate/snigate/oci"
)

// Modes (routes[].http.verify.mode).
const (
	ModeEnforce = "enforce" // refuse what is not verified (the default)
	ModeAudit   = "audit"   // decide, count, audit and log, but serve
)

// Config is one route's signature policy.
type Config struct {
	Route string // for log lines and metrics
	// Mode is ModeEnforce or ModeAudit; "": ModeEnforce.
	Mode string
	// Repositories must be signed; the others are served unchecked
	// ("skipped"). Empty: every repository.
	Repositories oci.RepoAllowList
	// Keys are the trusted public keys (LoadKey); a cosign signature by
	// any of them counts. Keys or Notation, or both.
	Keys []Key
	// Notation verifies Notary Project signatures (LoadNotation); nil:
	// they are not looked for.
	Notation *Notation
	// DecisionsPath is the file that keeps verified decisions across
	// restarts (DecisionsFile in the route's cache.dir); "": memory only.
	DecisionsPath string
	Metrics       *Metrics     // nil: not counted
	Log           *slog.Logger // nil: slog.Default()
}

// Verify is a route's signature policy: the link of its HTTP chain.
type Verify struct {
	cfg      Config
	trusted  map[string]bool // the keys' fingerprints
	dec      *decisions
	checking keyLocks // one signature check per digest at a time
	warn     ratelog.Limiter
}

// New returns the route's policy; the decisions file is read now.
func New(cfg Config) (*Verify, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	switch cfg.Mode {
	case "":
		cfg.Mode = ModeEnforce
	case ModeEnforce, ModeAudit:
	default:
		return nil, fmt.Errorf("verify: mode %q: want %s or %s", cfg.Mode, ModeEnforce, ModeAudit)
	}
	if len(cfg.Keys) == 0 && cfg.Notation == nil {
		return nil, errors.New("verify: no key: give one or more public keys, or a notation trust policy")
	}
	v := &Verify{cfg: cfg, trusted: map[string]bool{}}
	for _, k := range cfg.Keys {
		if k.verifier == nil {
			return nil, fmt.Errorf("verify: key %q was not loaded with LoadKey or ParseKey", k.Path)
		}
		v.trusted[k.Fingerprint] = true
	}
	if cfg.Notation != nil {
		if cfg.Notation.v == nil {
			return nil, errors.New("verify: notation was not loaded with LoadNotation")
		}
		v.trusted[cfg.Notation.Fingerprint] = true
	}
	v.dec = newDecisions(cfg.DecisionsPath, cfg.Log)
	cfg.Metrics.InitRoute(cfg.Route)
	return v, nil
}
