#!/usr/bin/env bash
# Fleet run (issue 31): PULL_NODES nodes (bench/loadgen HTTP/1.1 clients,
# node i through gateway i mod 3) behind 3 snigate gateways on loopback
# ports fetch one layer of LAYER_MIB MiB from the bench registry (loadgen
# upstream, mTLS), with the gateways sharing one SeaweedFS bucket
# (http.cache.shared) against three gateways with a local cache each, in
# the same run, rounds interleaved (shared, local; local, shared; ...):
#
#   pull    time until the last node has the layer, the registry's bytes
#           of it (in layers), on empty caches (every gateway restarted
#           with an empty directory; the shared ones with a key prefix of
#           the round's own, so the bucket is empty too);
#   hit     STREAMS nodes GET the layer at once from one gateway: the
#           shared gateway with its local tier emptied (POST
#           /api/cache/purge) and the bucket full (reads from the shared
#           tier), against the local gateway with the layer in its local
#           tier.
#
#   bench/fleet/run.sh                          # 3 rounds, a 200 MiB layer
#   ROUNDS=1 LAYER_MIB=32 bench/fleet/run.sh    # a quick look
#
# Needs: go, curl, ss, SeaweedFS (test/deps.sh builds /opt/snigate-tools/bin/weed;
# WEED overrides). It starts every process itself and kills each by PID on
# exit. OUT=FILE also writes the summary there.
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-3}
LAYER_MIB=${LAYER_MIB:-200}
PULL_NODES=${PULL_NODES:-8}
STREAMS=${STREAMS:-1,8}
BASE_PORT=${FLEET_BASE_PORT:-19700} # not run.sh's BASE_PORT: its registry still runs
WEED=${WEED:-/opt/snigate-tools/bin/weed}
OUT=${OUT:-}
GATEWAYS=3

for tool in go curl ss "$WEED"; do
	[ -e "$tool" ] || command -v "$tool" >/dev/null || { echo "fleet/run.sh: $tool not found" >&2; exit 1; }
done

work=$(mktemp -d /tmp/snigate-fleet.XXXXXX)
declare -A pid=()
cleanup() {
	local p
	for p in "${pid[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pid[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }

# wait_listen PORT NAME: until something listens on 127.0.0.1:PORT (60s).
wait_listen() {
	for _ in $(seq 600); do
		[ -n "$(ss -Htln "( sport = :$1 )")" ] && return 0
		kill -0 "${pid[$2]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "fleet/run.sh: $2 is not listening on port $1; its log:" >&2
	tail -30 "$work/$2.log" >&2 || true
	exit 1
}

stop() { # stop NAME: TERM, wait
	[ -n "${pid[$1]:-}" ] || return 0
	kill "${pid[$1]}" 2>/dev/null || true
	wait "${pid[$1]}" 2>/dev/null || true
	unset "pid[$1]"
}

p_up_http=$((BASE_PORT + 1)) p_up_stats=$((BASE_PORT + 2))
p_s3=$((BASE_PORT + 10)) p_master=$((BASE_PORT + 11)) p_volume=$((BASE_PORT + 12)) p_filer=$((BASE_PORT + 13))
gw_port() { echo $((BASE_PORT + 20 + $1 * 2 + ${2:-0})); }     # gw_port INDEX [1: admin]; 0-2 shared, 3-5 local
for p in $p_up_http $p_up_stats $p_s3 $p_master $p_volume $p_filer $((p_s3 + 10000)) $((p_master + 10000)) \
	$((p_volume + 10000)) $((p_filer + 10000)) $(for i in $(seq 0 5); do gw_port "$i"; gw_port "$i" 1; done); do
	[ -z "$(ss -Htln "( sport = :$p )")" ] || { echo "fleet/run.sh: port $p is in use; set FLEET_BASE_PORT" >&2; exit 1; }
done

log "building snigate and bench/loadgen into $work"
CGO_ENABLED=0 go build -o "$work/snigate" ./cmd/snigate
go build -o "$work/loadgen" ./bench/loadgen
"$work/loadgen" certs -dir "$work"
pki=$work

"$work/loadgen" upstream -pki "$pki" -http "127.0.0.1:$p_up_http" -stats "127.0.0.1:$p_up_stats" \
	-big-blob-mib 1 -layer-mib "$LAYER_MIB" >"$work/upstream.log" 2>&1 &
pid[upstream]=$!
wait_listen "$p_up_http" upstream

# SeaweedFS: master, volume, filer and S3 on loopback, one bucket.
mkdir -p "$work/weed/data"
printf '{"identities":[{"name":"snigate","credentials":[{"accessKey":"bench","secretKey":"bench-secret-key"}],"actions":["Admin","Read","Write","List","Tagging"]}]}' >"$work/weed/s3.json"
printf bench >"$work/weed/access_key"
printf bench-secret-key >"$work/weed/secret_key"
"$WEED" server -dir="$work/weed/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
	-master.port="$p_master" -master.port.grpc=$((p_master + 10000)) -volume.port="$p_volume" -volume.port.grpc=$((p_volume + 10000)) \
	-filer -filer.port="$p_filer" -filer.port.grpc=$((p_filer + 10000)) -filer.localSocket="$work/weed/filer.sock" \
	-s3 -s3.port="$p_s3" -s3.port.grpc=$((p_s3 + 10000)) -s3.port.iceberg=0 -s3.port.lance=0 -s3.config="$work/weed/s3.json" \
	-s3.localSocket="$work/weed/s3.sock" -master.volumeSizeLimitMB=256 -volume.max=32 -master.telemetry=false >"$work/weed.log" 2>&1 &
pid[weed]=$!
wait_listen "$p_s3" weed

# gateway_config INDEX ROUND: gateway INDEX's configuration (0-2 share
# the bucket under the prefix round-ROUND/, 3-5 have a local cache only).
gateway_config() {
	local shared=
	[ "$1" -lt "$GATEWAYS" ] && shared="
        shared:
          endpoint: http://127.0.0.1:$p_s3
          bucket: snigate-cache
          prefix: round-$2/
          access_key_file: $work/weed/access_key
          secret_key_file: $work/weed/secret_key"
	cat <<EOF
listen:
  tls: ["127.0.0.1:$(gw_port "$1")"]
  admin: "127.0.0.1:$(gw_port "$1" 1)"
timeouts: {client_hello: 5s, connect: 5s, idle: 1h, drain: 1s}
max_connections_per_client: 0
routes:
  - name: http
    sni: ["registry.bench.test"]
    mode: bridge
    upstreams: ["127.0.0.1:$p_up_http"]
    health: {check: tls, interval: 30s}
    dial_rate_per_client: 0
    serve: {cert: $pki/serve.crt, key: $pki/serve.key}
    upstream_tls: {cert: $pki/client.crt, key: $pki/client.key, ca: $pki/ca.crt, server_name: upstream.bench.test}
    http:
      cache:
        dir: $work/cache-$1
        max_size: 4GiB$shared
EOF
}

# start_gateways FIRST ROUND: gateways FIRST..FIRST+2, restarted with
# empty cache directories (and, shared, the round's own prefix).
start_gateways() {
	local i
	for i in $(seq "$1" $(($1 + GATEWAYS - 1))); do
		stop "gw$i"
		rm -rf "$work/cache-$i"
		gateway_config "$i" "$2" >"$work/gw$i.yaml"
		GOMAXPROCS=2 "$work/snigate" run -c "$work/gw$i.yaml" --log-level warn >>"$work/gw$i.log" 2>&1 &
		pid[gw$i]=$!
	done
	for i in $(seq "$1" $(($1 + GATEWAYS - 1))); do wait_listen "$(gw_port "$i" 1)" "gw$i"; done
}

# The bucket (weed takes writes once its filer joined the lock ring:
# `snigate check --probe` puts, reads and deletes an object).
for _ in $(seq 120); do
	echo "s3.bucket.create -name snigate-cache" | timeout 20 "$WEED" shell -master="127.0.0.1:$p_master" >>"$work/weed-shell.log" 2>&1 &&
		gateway_config 0 0 >"$work/probe.yaml" && "$work/snigate" check --probe -c "$work/probe.yaml" >"$work/probe.log" 2>&1 && break
	sleep 1
done
"$work/snigate" check --probe -c "$work/probe.yaml" >"$work/probe.log" 2>&1 || { cat "$work/probe.log" "$work/weed-shell.log" >&2; exit 1; }

addrs() { local i out=; for i in $(seq "$1" $(($1 + GATEWAYS - 1))); do out+="${out:+,}127.0.0.1:$(gw_port "$i")"; done; echo "$out"; }
measure() { # measure MODE NAME ROUND NODES GATEWAYS
	"$work/loadgen" fleet -pki "$pki" -mode "$1" -name "$2" -round "$3" -nodes "$4" -gateways "$5" \
		-upstream-stats "127.0.0.1:$p_up_stats" -layer-mib "$LAYER_MIB" | tee -a "$work/lines"
}
purge() { curl -fsS -X POST -H 'Content-Type: application/json' -d '{}' "http://127.0.0.1:$(gw_port "$1" 1)/api/cache/purge" >/dev/null; }

log "fleet: $ROUNDS rounds, a $LAYER_MIB MiB layer, $PULL_NODES nodes over $GATEWAYS gateways, hit streams $STREAMS"
echo "mode name round nodes last_s registry_layers MB/s errors"
for r in $(seq "$ROUNDS"); do
	order="shared local"
	[ $((r % 2)) = 0 ] && order="local shared"
	for kind in $order; do
		first=0
		[ "$kind" = local ] && first=$GATEWAYS
		start_gateways "$first" "$r"
		measure pull "$kind" "$r" "$PULL_NODES" "$(addrs "$first")"
	done
	for n in ${STREAMS//,/ }; do
		for kind in $order; do
			if [ "$kind" = shared ]; then
				purge 0 # the local tier emptied, the bucket full
				measure hit shared-tier "$r" "$n" "127.0.0.1:$(gw_port 0)"
			else
				measure hit local-tier "$r" "$n" "127.0.0.1:$(gw_port "$GATEWAYS")"
			fi
		done
	done
done

# Medians per mode, name and nodes.
summary() {
	echo
	echo "| scenario | caches | nodes | last node (s) | registry (layers) | MB/s to the nodes | rounds |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
	sort -k1,1 -k2,2 -k4,4n "$work/lines" | awk '
		function median(list, n,   a, i, j, t) {
			n = split(list, a, " ")
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		{ k = $1 " | " $2 " | " $4; if (!(k in n)) order[++keys] = k; n[k]++; last[k] = last[k] " " $5; layers[k] = layers[k] " " $6; mbs[k] = mbs[k] " " $7 }
		END { for (i = 1; i <= keys; i++) { k = order[i]; printf "| %s | %.2f | %.2f | %.0f | %d |\n", k, median(last[k]), median(layers[k]), median(mbs[k]), n[k] } }'
	echo
	echo "($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); a $LAYER_MIB MiB layer; SeaweedFS $("$WEED" version 2>/dev/null | head -1 | awk '{print $3}'))"
}
summary | tee ${OUT:+"$OUT"}
