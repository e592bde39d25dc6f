// Package regauth answers a registry's authentication challenges on the
// gateway's upstream leg, with credentials the bastion holds, so nodes
// need none.
//
// A Transport wraps the RoundTripper that reaches the registry. It drops
// the node's Authorization, sends each request with a cached token for
// the scope it needs (repository:NAME:pull, or pull,push when the route
// allows writing), and on a 401 asks the registry's token service for a
// token for exactly the challenged scope and sends the request once more
// (Basic challenges get Basic credentials). Tokens are cached per realm,
// service and scope, shared by every request, fetched once however many
// requests want them at the same moment, and renewed before they expire.
//
// Credentials come from a Source: Anonymous, a PasswordFile or a
// DockerConfig (auths entries and docker credential helpers), each
// re-read when its file changes. Secrets print as "[redacted]".
//
//	src, err := regauth.NewSource(regauth.SourceConfig{
//		Username: "robot", PasswordFile: "/etc/snigate/secrets/registry.password",
//		Host: "registry.example",
//	})
//	if err != nil { ... }
//	rt, err := regauth.New(upstreamTransport, regauth.Config{
//		Route: "registry", Host: "registry.example", Source: src,
//		TokenTransport: redirectTransport, Metrics: metrics,
//	})
//	if err != nil { ... }
//	resp, err := rt.RoundTrip(req)
//	var refused *regauth.RefusedError
//	if errors.As(err, &refused) {
//		regauth.WriteRefused(w) // 401 UNAUTHORIZED: the gateway's credentials were refused
//	}
//
// The Transport starts no goroutine of its own beyond the bounded token
// fetch a request is waiting for; it holds nothing to close.
package regauth
