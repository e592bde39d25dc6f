#!/usr/bin/env bash
# Installs the Debian packages the tests need, only when one is missing.
set -euo pipefail
need=()
have() { command -v "$1" >/dev/null 2>&1; }
have docker-registry || need+=(docker-registry)
have skopeo          || need+=(skopeo)
have ctr             || need+=(containerd)
have haproxy         || need+=(haproxy)
have dnsperf         || need+=(dnsperf)
have dnsmasq         || need+=(dnsmasq-base)
have openssl         || need+=(openssl)
have curl            || need+=(curl)
have ip              || need+=(iproute2)
have dig             || need+=(dnsutils)
have nft             || need+=(nftables)
have sslscan         || need+=(sslscan)
have promtool        || need+=(prometheus)
have qemu-s390x      || need+=(qemu-user)  # make vet: internal/rawnet's tests on a big-endian host
have systemd-socket-activate || need+=(systemd)   # e2e TestSocketActivationThenUpgrade; systemd-analyze for deploy
# crictl (a CRI client, for the CRI pull of test/e2e) is not packaged in
# Debian 12: it is built from the Go module proxy, pinned.
if ! have crictl; then
	echo "test/deps.sh: building crictl (sigs.k8s.io/cri-tools v1.37.0) into /usr/local/bin"
	GOBIN=/usr/local/bin GOFLAGS=-mod=mod go install sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0
fi
# cosign (signs the images of the signature policy's tests,
# internal/gateway TestVerifyWithCosign) is built from the Go module proxy,
# pinned, into /opt/snigate-tools/bin where the tests look for it.
if [ ! -x /opt/snigate-tools/bin/cosign ]; then
	echo "test/deps.sh: building cosign (github.com/sigstore/cosign/v3 v3.1.3) into /opt/snigate-tools/bin"
	mkdir -p /opt/snigate-tools/bin
	GOBIN=/opt/snigate-tools/bin GOFLAGS=-mod=mod go install github.com/sigstore/cosign/v3/cmd/cosign@v3.1.3
fi
# No notation CLI: the module proxy refuses github.com/notaryproject/notation
# (403, no version served), so the Notary Project tests (httpverify
# notation_test.go, test/e2e TestVerifyNotation) sign with notation-go's own
# signer library, a module dependency already.
# SeaweedFS (weed, the S3 server of s3tier's tests and the shared-cache
# e2e tests) is built from the Go module proxy, pinned; `go install`
# refuses it (its go.mod has replace directives), so the module is built
# in a writable copy, once, outside the clone (about 10 minutes on 2
# cores, a 230 MB binary).
WEED=/opt/snigate-tools/bin/weed
WEED_VERSION=v0.0.0-20261109003541-7506e5f91cd6
if [ ! -x "$WEED" ]; then
	echo "test/deps.sh: building SeaweedFS (github.com/seaweedfs/seaweedfs@$WEED_VERSION) into $WEED"
	d=$(cd / && GOFLAGS=-mod=mod go mod download -json "github.com/seaweedfs/seaweedfs@$WEED_VERSION" |
		python3 -c 'import json,sys;print(json.load(sys.stdin)["Dir"])')
	w=$(mktemp -d)
	cp -r "$d"/. "$w"
	chmod -R u+w "$w"
	mkdir -p "$(dirname "$WEED")"
	(cd "$w" && GOFLAGS=-mod=mod go build -o "$WEED.tmp" ./weed) && mv "$WEED.tmp" "$WEED"
	rm -rf "$w"
fi
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
	echo "test/deps.sh: missing ${need[*]} and not root: install them (apt-get install ${need[*]})" >&2
	exit 1
fi
echo "test/deps.sh: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}"
if [[ " ${need[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
	# Only promtool is needed (deploy tests); the package also starts a
	# Prometheus server on :9090, the admin API's default port.
	systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
