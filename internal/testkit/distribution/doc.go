// Package distribution runs what the tests of several packages pull
// from: Debian's docker-registry (distribution 2.8) on 127.0.0.1:0, with
// htpasswd or token auth, and a token service after the distribution
// token specification. It imports nothing of the packages under test;
// only tests import it.
//
// Usage:
//
//	ts := distribution.NewTokenService(t, distribution.TokenOptions{TLS: serverTLS, Users: map[string]string{"robot": "pw"}})
//	reg := distribution.Start(t, distribution.Options{TLS: distribution.TLSFiles{Cert: certPEM, Key: keyPEM}, Token: ts})
//	_ = reg.Addr // 127.0.0.1:port
//	line := reg.Logs.Wait(t, `msg="authorized request"`)
//	n := ts.Requests("repository:team/app:pull")
package distribution
