package regauth_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/regauth"
)

func ExampleParseChallenges() {
	for _, c := range regauth.ParseChallenges(`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/alpine:pull", Basic realm="x"`) {
		fmt.Println(c.Scheme, c.Params["realm"], c.Params["scope"])
	}
	// Output:
	// bearer https://auth.docker.io/token repository:library/alpine:pull
	// basic x
}

func ExampleWriteRefused() {
	rec := httptest.NewRecorder()
	regauth.WriteRefused(rec)
	fmt.Print(rec.Code, " ", rec.Body)
	// Output:
	// 401 {"errors":[{"code":"UNAUTHORIZED","message":"the gateway's credentials were refused by the registry"}]}
}

// Example_transport shows the lifecycle: a Source and a Transport per
// route, built once; requests through it; a refusal turned into the
// node's 401.
func Example_transport() {
	metrics := regauth.NewMetrics(prometheus.NewRegistry()) // once per process
	metrics.InitRoute("hub")
	rt, err := regauth.New(http.DefaultTransport, regauth.Config{
		Route: "hub", Host: "registry-1.docker.io", Source: regauth.Anonymous,
		Metrics: metrics, Logger: slog.Default(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	handler := func(w http.ResponseWriter, r *http.Request) {
		resp, err := rt.RoundTrip(r)
		var refused *regauth.RefusedError
		switch {
		case errors.As(err, &refused):
			regauth.WriteRefused(w)
			return
		case err != nil:
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
	}
	_ = handler
	// A route removed by a reload: its series go.
	metrics.DeleteRoute("hub")
	fmt.Println("ready")
	// Output: ready
}
