#!/usr/bin/env bash
# bench/auth/run.sh — registry credentials at the gateway (issue 30), on
# loopback, in one run:
#
#  1. the cost per request of an http route with `auth` against the same
#     route without it: loadgen's http-manifest and http-blobs scenarios
#     against two snigate processes in interleaved rounds, "snigate" (the
#     route to loadgen's mTLS registry) and "snigate-auth" (the same route
#     with http.auth to the same registry behind the token flow: 401,
#     Bearer challenge, a token service; tokens cached after the first);
#  2. a pull of loadgen's image (manifest, config, layers; the large one
#     PULL_BLOB_MIB) through snigate's auth route against distribution's
#     proxy mode (Debian docker-registry with proxy.remoteurl + username
#     and password) in front of the same registry: time per pull (the
#     first, cold, and the others) and the requests the registry and its
#     token service got.
#
#   bench/auth/run.sh                  # 3 rounds of 4s, 5 pulls
#   ROUNDS=1 HTTP_TIME=2s PULLS=2 bench/auth/run.sh   # a quick look
#
# Needs go, ss, python3, docker-registry (the proxy part is skipped
# without it). Every process is started here and killed by PID on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-3}
HTTP_TIME=${HTTP_TIME:-4s}
CONC=${CONC:-32}
PULLS=${PULLS:-5}
PULL_BLOB_MIB=${PULL_BLOB_MIB:-64}
BASE_PORT=${BASE_PORT:-19500}
REGISTRY=${REGISTRY:-docker-registry}

p_up=$BASE_PORT p_auth=$((BASE_PORT + 1)) p_plain=$((BASE_PORT + 2)) p_token=$((BASE_PORT + 3))
p_snigate=$((BASE_PORT + 4)) p_snigate_auth=$((BASE_PORT + 5)) p_proxy=$((BASE_PORT + 6))

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

wait_listen() { # wait_listen PORT NAME
	for _ in $(seq 200); do
		[ -n "$(ss -Htln "( sport = :$1 )")" ] && return 0
		sleep 0.1
	done
	echo "auth/run.sh: $2 is not listening on port $1; its log:" >&2
	cat "$work/$2.log" >&2 || true
	exit 1
}

log "building snigate, loadgen, bench/auth/pull"
go build -o "$work/snigate" ./cmd/snigate
go build -o "$work/loadgen" ./bench/loadgen
go build -o "$work/pull" ./bench/auth/pull
"$work/loadgen" certs -dir "$work" >/dev/null
pki=$work
printf 'bench-Passw0rd\n' >"$work/password"

"$work/loadgen" upstream -pki "$pki" -http "127.0.0.1:$p_up" -http-auth "127.0.0.1:$p_auth" \
	-http-auth-plain "127.0.0.1:$p_plain" -token "127.0.0.1:$p_token" \
	-big-blob-mib "$PULL_BLOB_MIB" -layer-mib 0 >"$work/upstream.log" 2>&1 &
pids+=($!) upstream_pid=$!
wait_listen "$p_up" upstream
wait_listen "$p_token" upstream

# snigate_config PORT UPSTREAM_PORT [AUTH]: one http route, with
# http.auth when AUTH=1; nothing else differs.
snigate_config() {
	local http=" {}"
	# redirect_allow: the token service is reached like a followed
	# redirect, and the address guard refuses loopback unless allowed.
	[ "${3:-}" = 1 ] && http="
      redirect_allow: [\"127.0.0.1/32\"]
      auth: {username: bench, password_file: $work/password}"
	cat <<EOF
listen:
  tls: ["127.0.0.1:$1"]
routes:
  - name: http
    sni: ["registry.bench.test"]
    mode: bridge
    upstreams: ["127.0.0.1:$2"]
    health: {check: tcp, interval: 30s}
    serve: {cert: $pki/serve.crt, key: $pki/serve.key}
    upstream_tls:
      cert: $pki/client.crt
      key: $pki/client.key
      ca: $pki/ca.crt
      server_name: upstream.bench.test
    http:$http
EOF
}
snigate_config "$p_snigate" "$p_up" >"$work/snigate.yaml"
snigate_config "$p_snigate_auth" "$p_auth" 1 >"$work/snigate-auth.yaml"
declare -A pid=()
for name in snigate snigate-auth; do
	"$work/snigate" check -c "$work/$name.yaml" >/dev/null
	GOMAXPROCS=2 "$work/snigate" run -c "$work/$name.yaml" --log-level warn >"$work/$name.log" 2>&1 &
	pids+=($!) pid[$name]=$!
done
wait_listen "$p_snigate" snigate
wait_listen "$p_snigate_auth" snigate-auth

stats() { curl -sk "https://127.0.0.1:$p_token/stats"; }

# --- 1. cost per request ---------------------------------------------------------
log "per request: http-manifest, http-blobs; $ROUNDS rounds of $HTTP_TIME, snigate and snigate-auth interleaved"
results=$work/results.jsonl
s0=$(stats)
"$work/loadgen" run -pki "$pki" -out "$results" -upstream-pid "$upstream_pid" \
	-scenarios http-manifest,http-blobs -rounds "$ROUNDS" -conc "$CONC" -http-time "$HTTP_TIME" \
	-target "name=snigate,http=127.0.0.1:$p_snigate,pid=${pid[snigate]}" \
	-target "name=snigate-auth,http=127.0.0.1:$p_snigate_auth,pid=${pid[snigate-auth]}" >"$work/loadgen.out" 2>&1 ||
	{ cat "$work/loadgen.out" >&2; exit 1; }
s1=$(stats)

echo "## Per request: an http route with auth against the same route without"
echo
python3 - "$results" "$s0" "$s1" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
s0, s1 = json.loads(sys.argv[2]), json.loads(sys.argv[3])
print("| scenario | target | rounds | req/s (median) | proxy CPU µs/req (median) | p99 ms (median) |")
print("|---|---|---|---|---|---|")
by = {}
for r in rows:
    by.setdefault((r["scenario"], r["target"]), []).append(r)
med = {}
for (sc, tg), rs in sorted(by.items()):
    v = lambda k: statistics.median([x["values"].get(k, float("nan")) for x in rs])
    med[(sc, tg)] = (v("req_s"), v("cpu_us_req"))
    print(f"| {sc} | {tg} | {len(rs)} | {v('req_s'):.0f} | {v('cpu_us_req'):.1f} | {v('p99_ms'):.2f} |")
print()
for sc in sorted({k[0] for k in med}):
    a, b = med.get((sc, "snigate")), med.get((sc, "snigate-auth"))
    if a and b:
        print(f"- {sc}: auth/no-auth req/s {b[0] / a[0]:.3f}, CPU per request {b[1] - a[1]:+.1f} µs ({b[1] / a[1]:.3f}×)")
print(f"- token service requests during the loads: {s1['token_requests'] - s0['token_requests']}; "
      f"registry requests answered 401: {s1['challenged'] - s0['challenged']} "
      f"of {s1['registry_requests'] - s0['registry_requests']} (tokens cached: one per scope)")
EOF
echo

# --- 2. a pull: snigate's auth route against distribution's proxy mode ----------
pull_block() { # pull_block NAME ARGS...: PULLS pulls, then the registry's counts
	local name=$1 a b
	shift
	a=$(stats)
	"$work/pull" -n "$PULLS" "$@" >"$work/pull-$name.out" 2>&1 || { cat "$work/pull-$name.out" >&2; return 1; }
	b=$(stats)
	python3 - "$name" "$work/pull-$name.out" "$a" "$b" "$PULLS" <<'EOF'
import json, statistics, sys
name, out, a, b, n = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]), int(sys.argv[5])
ms = [float(l.split()[2]) for l in open(out) if l.startswith("pull ")]
warm = statistics.median(ms[1:]) if len(ms) > 1 else float("nan")
reqs, toks = b["registry_requests"] - a["registry_requests"], b["token_requests"] - a["token_requests"]
print(f"| {name} | {ms[0]:.1f} | {warm:.1f} | {reqs} ({reqs / n:.1f}/pull) | {toks} |")
EOF
}

echo "## A pull of the image ($PULL_BLOB_MIB MiB large layer, $PULLS pulls on new connections)"
echo
echo "| through | first pull ms | later pulls ms (median) | registry requests | token requests |"
echo "|---|---|---|---|---|"
pull_block snigate-auth -addr "127.0.0.1:$p_snigate_auth" -name registry.bench.test -ca "$pki/ca.crt"
if command -v "$REGISTRY" >/dev/null; then
	cat >"$work/proxy.yml" <<EOF
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $work/proxy-storage}, delete: {enabled: true}}
http: {addr: "127.0.0.1:$p_proxy"}
proxy:
  remoteurl: https://127.0.0.1:$p_plain
  username: bench
  password: bench-Passw0rd
EOF
	SSL_CERT_FILE=$pki/ca.crt GOMAXPROCS=2 "$REGISTRY" serve "$work/proxy.yml" >"$work/proxy.log" 2>&1 &
	pids+=($!)
	wait_listen "$p_proxy" proxy
	pull_block distribution-proxy -addr "127.0.0.1:$p_proxy" -plain
else
	echo "| distribution-proxy | skipped: $REGISTRY not installed | | | |"
fi
echo
echo "snigate-auth's route has no http.cache (every pull reaches the registry; a cache is issue 16's);"
echo "distribution's proxy stores what it pulled and serves later pulls from its disk, speaking plain"
echo "HTTP to the client and TLS without a client certificate to the registry (-http-auth-plain)."
