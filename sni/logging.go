package sni

import "log/slog"

// warnf logs msg at Warn, rate-limited per reason (a result, optionally
// qualified, such as "upstream_error/registry"); metrics count every
// occurrence anyway.
func (s *Server) warnf(reason, msg string, args ...any) {
	s.warn.Log(s.log, slog.LevelWarn, reason, msg, args...)
}
