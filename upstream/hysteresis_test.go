package upstream

import "testing"

// TestHysteresis: rise/fall counts only results in a row against the
// state, flips at the threshold, and starts up.
func TestHysteresis(t *testing.T) {
	const P, F = true, false
	tests := []struct {
		name       string
		rise, fall int
		results    []bool
		wantUp     []bool // the state after each result
		wantChange []int  // indexes of the results that changed it
	}{
		{name: "starts up, passes keep it up", rise: 2, fall: 3, results: []bool{P, P}, wantUp: []bool{true, true}},
		{name: "down after fall failures", rise: 2, fall: 3, results: []bool{F, F, F}, wantUp: []bool{true, true, false}, wantChange: []int{2}},
		{name: "a pass resets the failure run", rise: 2, fall: 3, results: []bool{F, F, P, F, F}, wantUp: []bool{true, true, true, true, true}},
		{name: "up again after rise passes", rise: 2, fall: 1, results: []bool{F, P, P}, wantUp: []bool{false, false, true}, wantChange: []int{0, 2}},
		{name: "a failure resets the pass run", rise: 2, fall: 1, results: []bool{F, P, F, P, P}, wantUp: []bool{false, false, false, false, true}, wantChange: []int{0, 4}},
		{name: "rise and fall of 1 flip at once", rise: 1, fall: 1, results: []bool{F, P, F}, wantUp: []bool{false, true, false}, wantChange: []int{0, 1, 2}},
		{name: "below 1 counts as 1", rise: 0, fall: 0, results: []bool{F, P}, wantUp: []bool{false, true}, wantChange: []int{0, 1}},
		{name: "the run restarts after a change", rise: 3, fall: 2, results: []bool{F, F, P, P, F, F}, wantUp: []bool{true, false, false, false, false, false}, wantChange: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Hysteresis
			if !h.Up() {
				t.Fatal("zero value is down, want up")
			}
			var changes []int
			for i, ok := range tt.results {
				changed, up := h.Observe(ok, tt.rise, tt.fall)
				if up != tt.wantUp[i] || up != h.Up() {
					t.Fatalf("after result %d (%v): up %v (Up %v), want %v", i, ok, up, h.Up(), tt.wantUp[i])
				}
				if changed {
					changes = append(changes, i)
				}
			}
			if len(changes) != len(tt.wantChange) {
				t.Fatalf("changed at %v, want %v", changes, tt.wantChange)
			}
			for i := range changes {
				if changes[i] != tt.wantChange[i] {
					t.Fatalf("changed at %v, want %v", changes, tt.wantChange)
				}
			}
		})
	}
}

// TestHysteresisSet: forcing the state ends the run, so the next change
// needs a whole rise (or fall) again.
func TestHysteresisSet(t *testing.T) {
	var h Hysteresis
	h.Observe(false, 2, 3)
	h.Observe(false, 2, 3) // two of three failures
	h.Set(false)
	if h.Up() {
		t.Fatal("up after Set(false)")
	}
	if changed, up := h.Observe(true, 2, 3); changed || up {
		t.Fatalf("first pass after Set(false): changed %v up %v, want neither (rise 2)", changed, up)
	}
	if changed, up := h.Observe(true, 2, 3); !changed || !up {
		t.Fatalf("second pass: changed %v up %v, want both", changed, up)
	}
}
