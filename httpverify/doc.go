// Package httpverify is the signature policy of an http route
// (routes[].http.verify): a link of the route's HTTP chain that lets a
// manifest reach a node only when a configured key signed its digest
// (cosign's signature tag, or an OCI 1.1 referrer: cosign's legacy
// signature artifact, the sigstore bundle cosign v3 writes, or a Notary
// Project signature verified with notation-go), and a blob
// only when a verified manifest of its repository references it.
//
// It imports package oci and nothing else of snigate's; it reads
// signatures through the links below it (the cache, the proxy), so that
// they are cached like manifests. See README.md.
package httpverify
