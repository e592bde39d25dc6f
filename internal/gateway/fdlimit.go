package gateway

import (
	"fmt"
	"syscall"

	"github.com/snigate/snigate/internal/config"
)

// fdReserve is the descriptors a gateway holds besides its connections:
// listeners, health checks, watched files, the admin API and DNS.
const fdReserve = 256

// fdsNeeded is how many file descriptors cfg can use at once: two per
// connection at max_connections (the client's and the upstream's), plus
// one health check per upstream and the reserve.
func fdsNeeded(cfg *config.Config) uint64 {
	n := uint64(2*cfg.MaxConnections) + fdReserve
	for _, r := range cfg.Routes {
		n += uint64(len(r.Upstreams))
	}
	return n
}

// FDLimitWarning says what to change when the process's descriptor limit
// (RLIMIT_NOFILE, after Go raised the soft limit to the hard one) is
// below what cfg can use: past it, accept and dial fail with EMFILE. ""
// when the limit suffices or cannot be read.
func FDLimitWarning(cfg *config.Config) string {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return ""
	}
	return fdLimitWarning(lim.Cur, fdsNeeded(cfg), cfg.MaxConnections)
}

func fdLimitWarning(limit, need uint64, maxConns int) string {
	if limit >= need {
		return ""
	}
	return fmt.Sprintf("the file descriptor limit is %d, below the %d that max_connections %d needs (two per connection plus upstream checks and %d spare): "+
		"raise it (LimitNOFILE=%d in the systemd unit, ulimit -n, or the container runtime's nofile) or lower max_connections to %d",
		limit, need, maxConns, fdReserve, need, max(0, (int(limit)-int(need-uint64(2*maxConns)))/2))
}
