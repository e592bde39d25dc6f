package gateway

import "testing"

// TestNotReadyText is issue 27 item 3: a process started by an upgrade
// (SIGUSR2) answered /readyz "not ready: starting" like any other while
// the previous process served; it now says it is taking over. A gateway
// that has been ready drains when it is not, whether or not /readyz was
// asked in between.
func TestNotReadyText(t *testing.T) {
	tests := []struct {
		name               string
		wasReady, tookOver bool
		want               string
	}{
		{name: "first start", want: "starting"},
		{name: "taking over by SIGUSR2", tookOver: true,
			want: "starting: taking over the listening sockets from the previous process (SIGUSR2 upgrade), which serves until this one is ready"},
		{name: "draining", wasReady: true, want: "draining"},
		{name: "draining after taking over", wasReady: true, tookOver: true, want: "draining"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := notReadyText(tt.wasReady, tt.tookOver); got != tt.want {
				t.Errorf("notReadyText = %q, want %q", got, tt.want)
			}
		})
	}
}
