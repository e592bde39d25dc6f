package config_test

import (
	"errors"
	"fmt"

	"github.com/snigate/snigate/internal/config"
)

func ExampleParse() {
	cfg, err := config.Parse("snigate.yaml", []byte(`listen:
  tls: [":443"]
routes:
  - name: git
    sni: [git.example.com]
    mode: splice
    upstreams: ["10.2.0.1:443", "10.2.0.2:443"]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	r := cfg.Routes[0]
	fmt.Println(r.Name, r.Mode, r.Balance, r.Health.Check, r.Health.Interval, cfg.Timeouts.Idle)
	// Output: git splice roundrobin tcp 3s 1h0m0s
}

func ExampleErrorList() {
	_, err := config.Parse("snigate.yaml", []byte(`listen:
  tls: [":443"]
routes:
  - name: git
    sni: [git.example.com]
    mode: splice
    upstreams: ["10.2.0.1"]
    healt:
      interval: 3
`))
	var errs config.ErrorList
	if errors.As(err, &errs) {
		for _, e := range errs {
			fmt.Println(e)
		}
	}
	// Output:
	// snigate.yaml:7: routes[0].upstreams[0]: want host:port such as "10.1.0.10:443", got "10.2.0.1" (missing port in address)
	// snigate.yaml:8: routes[0].healt: unknown key (did you mean "health"?); allowed here: name, sni, mode, upstreams, balance, proxy_protocol, health, serve, upstream_tls, max_dials, max_dials_per_client, dial_rate_per_client, http
}
