// Package distribution runs what the tests of several packages pull
// from: Debian's docker-registry (distribution 2.8) on 127.0.0.1:0, with
// htpasswd or token auth, a token service after the distribution token
// specifications (GET with Basic, the OAuth2 POST password and
// refresh_token grants, refresh tokens handed out, or no POST at all),
// and a blob storage host a registry's redirect middleware points at
// (it records whether a request carried Authorization or a client
// certificate). It imports nothing of the packages under test;
// only tests import it.
//
// Usage:
//
//	ts := distribution.NewTokenService(t, distribution.TokenOptions{TLS: serverTLS, Users: map[string]string{"robot": "pw"}})
//	reg := distribution.Start(t, distribution.Options{TLS: distribution.TLSFiles{Cert: certPEM, Key: keyPEM}, Token: ts})
//	_ = reg.Addr // 127.0.0.1:port
//	line := reg.Logs.Wait(t, `msg="authorized request"`)
//	n := ts.Requests("repository:team/app:pull")
//	grants := ts.Grants() // "password", "refresh_token", "basic", ...
//	blobs := distribution.NewStorageHost(t, distribution.StorageOptions{TLS: serverTLS, Root: storageDir})
//	cfg := distribution.RedirectYAML("https://" + blobs.Addr()) // docker-registry's middleware section
package distribution
