package upstream

import "testing"

// Available answers what Candidates would, without taking a turn of the
// rotation.
func TestAvailable(t *testing.T) {
	tests := []struct {
		name  string
		state map[string]State
		want  bool
	}{
		{name: "all ready", want: true},
		{name: "one in maintenance", state: map[string]State{threeAddrs[0]: StateMaint}, want: true},
		{name: "none ready", state: map[string]State{threeAddrs[0]: StateMaint, threeAddrs[1]: StateDrain, threeAddrs[2]: StateMaint}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPool(t, Config{Addrs: threeAddrs})
			for a, s := range tt.state {
				if err := p.SetState(a, s); err != nil {
					t.Fatal(err)
				}
			}
			before := p.robin.Load()
			got := p.Available()
			if p.robin.Load() != before {
				t.Error("Available took a turn of the round-robin rotation")
			}
			if got != tt.want || got != (len(p.Candidates()) > 0) {
				t.Errorf("Available() = %v, want %v (and to agree with Candidates)", got, tt.want)
			}
		})
	}
}
