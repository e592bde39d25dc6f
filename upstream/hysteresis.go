package upstream

// Hysteresis is the rise/fall rule of a health check, the one rule of
// upstream health and of the DNS answer check: a state that is up goes
// down after fall consecutive failures; once down, it comes up after rise
// consecutive passes. A result that agrees with the state resets the run,
// so only results in a row count. The zero value is up with no run (hosts
// start up, as HAProxy's servers do). It is not safe for concurrent use:
// its owner guards it.
type Hysteresis struct {
	down bool
	run  int // consecutive results against the state
}

// Observe counts one result, ok a pass, under the rule rise/fall (values
// below 1 count as 1; a caller passes its current settings, so a reload
// that changes them applies to the next result). It reports whether the
// state changed, and the state after it.
func (h *Hysteresis) Observe(ok bool, rise, fall int) (changed, up bool) {
	if ok != h.down { // agrees with the state
		h.run = 0
		return false, !h.down
	}
	h.run++
	need := fall
	if h.down {
		need = rise
	}
	if h.run < need {
		return false, !h.down
	}
	h.down, h.run = !h.down, 0
	return true, !h.down
}

// Up reports the state.
func (h *Hysteresis) Up() bool { return !h.down }

// Set forces the state, ending any run: passive health marks a host down
// on the evidence of traffic without waiting for fall checks.
func (h *Hysteresis) Set(up bool) { h.down, h.run = !up, 0 }
