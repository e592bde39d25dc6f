#!/usr/bin/env bash
# bench/run.sh — snigate side by side with HAProxy, nginx (stream) and
# sniproxy on loopback, plus a direct no-proxy baseline (issue 8). `make
# bench` runs it. It builds snigate and bench/loadgen, writes every
# configuration into a temporary directory, starts each proxy itself (and
# kills each by PID on exit), and runs every scenario against every target
# in interleaved rounds (A B C D A B C D ...). It prints medians and ratios
# to HAProxy and writes bench/out/results-DATE.md.
#
#   bench/run.sh                                  # the full run, ~10 minutes
#   ROUNDS=1 RATE_TIME=2s bench/run.sh            # a quick look
#   SCENARIOS=splice-rate,idle-mem TARGETS=snigate,haproxy bench/run.sh
#   PROFILE=1 bench/run.sh                        # snigate via bench/snigate-pprof:
#                                                 #   CPU, alloc, heap, goroutine profiles
#   PROFILE=1 LIVE_MEM=1 SCENARIOS=http-bigblob HTTP_STREAMS=1,4,16 bench/run.sh
#                                                 # snigate's live heap per large download in flight
#
# Scenarios (loadgen names): splice-rate, splice-tput (1 and 8 streams),
# bridge-full, bridge-resumed, bridge-tput, http-manifest, http-blobs,
# http-bigblob (1 and 4 connections; SCENARIOS=http-* picks the three),
# cache-pull, cache-hit (1 and 8 streams; SCENARIOS=cache-* picks both),
# idle-mem (a fill per count of IDLE_COUNTS, each on freshly started
# proxies, RSS read at each of IDLE_READS after the last tunnel opened);
# then bench/dns/run.sh when it exists (DNS=0 skips it), and
# bench/auth/run.sh when SCENARIOS names auth (issue 30), and
# bench/verify/run.sh (signature policy; SCENARIOS=verify or all); SCENARIOS with
# fleet also runs bench/fleet/run.sh (the shared cache tier, issue 31).
# Targets: direct snigate snigate-x25519 haproxy nginx sniproxy, and
# floor, floor-server, floor-transport (never by default; http-manifest
# and http-blobs only: bench/floor, the least a Go proxy does per request
# with net/http's parsers on both legs, and the same with net/http's
# Server or Transport on one leg) (sniproxy:
# splice only; snigate-x25519: bridge and http only, the same gateway with
# serve.key_exchanges and upstream_tls.key_exchanges [x25519], the key
# exchange OpenSSL 3.0 gives HAProxy and nginx on both legs; direct: no
# idle-mem). The http scenarios (issue 15) measure snigate's HTTP-aware
# bridge (a bridge route with http: {}) against nginx as an HTTP reverse
# proxy and HAProxy mode http, all reusing their upstream connections; a
# snigate whose `snigate check` rejects the http route, or that does not
# answer it as an HTTP proxy, is skipped there with the reason. The cache
# scenarios (issue 16) add snigate-cache (the same http route with
# http.cache, its own process, emptied through POST /api/cache/purge
# before each cache-pull) and nginx-cache (proxy_cache + proxy_cache_lock,
# its directory emptied before each cache-pull), measured beside snigate's
# and nginx's http routes without a cache; the two cache targets take part
# in the cache scenarios only.
#
# Fair settings: 2 worker threads or processes for every proxy (sniproxy is
# single-threaded), HAProxy splices (option splice-request and
# splice-response), nginx routes with
# ssl_preread, logging off or at warning level (snigate logs one line per
# connection at info, so it runs with --log-level warn).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
RATE_TIME=${RATE_TIME:-5s}     # one splice connection-rate measurement
LAT_RATE=${LAT_RATE:-2000}     # connections/s of the open-loop splice-latency scenario
HS_TIME=${HS_TIME:-4s}         # one bridge handshake measurement
TPUT_TIME=${TPUT_TIME:-3s}     # one throughput measurement
CONC=${CONC:-32}               # concurrent connections (rate and handshakes)
STREAMS=${STREAMS:-1,8}        # throughput stream counts
# Idle memory (issue 21): one fill per count, each on freshly started
# proxies, the proxy's RSS read at each of IDLE_READS after the last
# tunnel of the fill opened. Counts above what the descriptor limit fits
# are measured at the largest that fits (see below). IDLE_CONNS, the
# single count of earlier runs, still works.
IDLE_COUNTS=${IDLE_COUNTS:-${IDLE_CONNS:-1000,5000,20000}}
IDLE_READS=${IDLE_READS:-0.2s,2s}
HTTP_TIME=${HTTP_TIME:-4s}     # one http-manifest or http-blobs measurement
HTTP_STREAMS=${HTTP_STREAMS:-1,4} # connections of the http-bigblob scenarios
# UPSTREAM_PROTOCOL=auto|http1|h2: http.upstream_protocol of snigate's http
# routes where the binary knows the key; unset: the binary's default (auto).
UPSTREAM_PROTOCOL=${UPSTREAM_PROTOCOL:-}
BIG_BLOB_MIB=${BIG_BLOB_MIB:-1024} # the registry's large blob (generated, never in memory)
LAYER_MIB=${LAYER_MIB:-200}    # the cache scenarios' layer (generated, never in memory)
PULL_NODES=${PULL_NODES:-8}    # nodes pulling the layer at once in cache-pull
CACHE_STREAMS=${CACHE_STREAMS:-1,8} # streams of the cache-hit scenarios
SCENARIOS=${SCENARIOS:-all}
default_targets=direct,snigate,snigate-x25519,snigate-cache,haproxy,nginx,nginx-cache,sniproxy
TARGETS=${TARGETS:-$default_targets}
BASE_PORT=${BASE_PORT:-19400}
PROFILE=${PROFILE:-0}
LIVE_MEM=${LIVE_MEM:-0} # with PROFILE=1: http-bigblob samples snigate's live heap instead of profiling its CPU
BASE_REV=${BASE_REV:-} # a commit: also run snigate built from it (target snigate-base), for before/after
BASE_ENV=${BASE_ENV:-} # environment of snigate-base only (e.g. GOGC=400 with BASE_REV=HEAD: a runtime setting A/B)
CLIENT_GROUPS=${CLIENT_GROUPS:-default} # bridge clients offer Go's default groups, or only x25519
DNS=${DNS:-1}
HAPROXY=${HAPROXY:-/usr/sbin/haproxy}
NGINX=${NGINX:-/usr/sbin/nginx}
# NGINX_HALF_CLOSE=1: nginx's splice server keeps a half-closed connection
# open (proxy_half_close on, off by default) and passes the FIN on, as
# snigate and HAProxy always do: the same work per connection.
NGINX_HALF_CLOSE=${NGINX_HALF_CLOSE:-0}
NGINX_STREAM=${NGINX_STREAM:-/usr/lib/nginx/modules/ngx_stream_module.so}
SNIPROXY=${SNIPROXY:-/usr/sbin/sniproxy}

# Each proxy holds two sockets per idle tunnel: 20,000 tunnels need 40,000
# descriptors in one process (the load generator and the upstream each
# hold one per tunnel). Raise the hard limit to that when this shell may
# (root with CAP_SYS_RESOURCE; at most fs.nr_open), then the soft limit
# to 65,536 or what the fills need, within the hard limit. (Not beyond:
# nginx preallocates worker_connections, sized from it.)
for n in ${IDLE_COUNTS//,/ }; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: IDLE_COUNTS: want comma-separated tunnel counts such as 1000,5000,20000, got '$IDLE_COUNTS'" >&2; exit 1; }
done
idle_most=$(tr ',' '\n' <<<"$IDLE_COUNTS" | sort -n | tail -1)
fd_want=$((2 * idle_most + 2000))
fd_hard=$(ulimit -Hn)
nr_open=$(cat /proc/sys/fs/nr_open 2>/dev/null || echo "$fd_want")
fd_raise=
if [ "$fd_hard" != unlimited ] && [ "$fd_hard" -lt "$fd_want" ]; then
	fd_new=$((fd_want < nr_open ? fd_want : nr_open))
	if prlimit --pid $$ --nofile="$fd_new:$fd_new" 2>/dev/null || ulimit -Hn "$fd_new" 2>/dev/null; then
		fd_raise="raised from $fd_hard"
	else
		fd_raise="could not be raised from $fd_hard to $fd_new: it takes CAP_SYS_RESOURCE, which this shell lacks"
	fi
	fd_hard=$(ulimit -Hn)
fi
fd_soft=$((fd_want > 65536 ? fd_want : 65536))
[ "$fd_hard" = unlimited ] || [ "$fd_hard" -ge "$fd_soft" ] || fd_soft=$fd_hard
ulimit -n "$fd_soft"
FD_LIMIT=$(ulimit -n)

# HAProxy refuses to start when maxconn's sockets plus its splice pipes
# (maxpipes, default maxconn/4 pairs) exceed the descriptor limit: cap the
# pipes (only busy tunnels hold one) and size maxconn from what is left.
haproxy_maxpipes=256
haproxy_maxconn=$(((FD_LIMIT - 200 - 2 * haproxy_maxpipes) / 2))

# The largest idle fill that fits every proxy: HAProxy's maxconn less 100
# (the others hold 2 sockets per tunnel within the same limit), in
# hundreds. A larger count is measured at this one, and the report's
# header says so.
idle_fit=$(((haproxy_maxconn - 100) / 100 * 100))
idle_counts= idle_capped=
for n in ${IDLE_COUNTS//,/ }; do
	m=$n
	if [ "$n" -gt "$idle_fit" ]; then
		m=$idle_fit
		idle_capped+="${idle_capped:+, }$n measured at $m"
	fi
	[[ ",$idle_counts," == *",$m,"* ]] || idle_counts+="${idle_counts:+,}$m"
done
idle_max=$(tr ',' '\n' <<<"$idle_counts" | sort -n | tail -1)
snigate_max_conns=$((idle_max + 1000 > 10000 ? idle_max + 1000 : 10000))

stamp=$(date -u +%Y%m%d-%H%M%S)
out_dir=bench/out
mkdir -p "$out_dir"
work=$(mktemp -d /tmp/snigate-bench.XXXXXX)
results="$work/results.jsonl"
prof_dir="$out_dir/profile-$stamp"
declare -A pid=()
upstream_pid=

log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }

stop_pid() { # stop_pid PID: TERM, then KILL after 5s
	local p=$1
	kill "$p" 2>/dev/null || return 0
	for _ in $(seq 50); do
		kill -0 "$p" 2>/dev/null || { wait "$p" 2>/dev/null || true; return 0; }
		sleep 0.1
	done
	kill -KILL "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
}

stop_proxies() {
	local name
	for name in "${!pid[@]}"; do
		stop_pid "${pid[$name]}"
		unset "pid[$name]"
	done
}

cleanup() {
	stop_proxies
	[ -n "$upstream_pid" ] && stop_pid "$upstream_pid"
	mkdir -p "$out_dir/logs-$stamp"
	cp "$work"/*.log "$out_dir/logs-$stamp/" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

wanted() { [[ ",$TARGETS," == *",$1,"* ]]; }

need() {
	local tool
	for tool in "$@"; do
		[ -e "$tool" ] || command -v "$tool" >/dev/null || { echo "run.sh: $tool not found" >&2; exit 1; }
	done
}

# wait_listen PORT NAME: until something listens on 127.0.0.1:PORT (10s).
wait_listen() {
	for _ in $(seq 100); do
		[ -n "$(ss -Htln "( sport = :$1 )")" ] && return 0
		sleep 0.1
	done
	echo "run.sh: $2 is not listening on port $1; its log:" >&2
	cat "$work/$2.log" >&2 || true
	exit 1
}

port_free() {
	if [ -n "$(ss -Htln "( sport = :$1 )")" ]; then
		echo "run.sh: port $1 is in use; set BASE_PORT to a free range" >&2
		exit 1
	fi
}

p_up_splice=$((BASE_PORT + 1)) p_up_bridge=$((BASE_PORT + 2))
p_snigate=$((BASE_PORT + 10)) p_pprof=$((BASE_PORT + 11))
p_snigate_x=$((BASE_PORT + 12)) p_pprof_x=$((BASE_PORT + 13))
p_haproxy=$((BASE_PORT + 20)) p_haproxy_bridge=$((BASE_PORT + 21))
p_nginx=$((BASE_PORT + 30)) p_nginx_bridge=$((BASE_PORT + 31))
p_sniproxy=$((BASE_PORT + 40)) p_up_stats=$((BASE_PORT + 3))
p_snigate_base=$((BASE_PORT + 14))
p_up_http=$((BASE_PORT + 4)) p_haproxy_http=$((BASE_PORT + 22)) p_nginx_http=$((BASE_PORT + 32))
p_snigate_cache=$((BASE_PORT + 15)) p_admin_cache=$((BASE_PORT + 16)) p_nginx_cache=$((BASE_PORT + 33))

# --- build -------------------------------------------------------------------

need go ss
wanted haproxy && need "$HAPROXY"
wanted nginx && need "$NGINX" "$NGINX_STREAM"
wanted nginx-cache && need "$NGINX"
if [ "$TARGETS" = "$default_targets" ] && ! [ -x "$SNIPROXY" ]; then
	# sniproxy is a reference, not one of issue 21's: the default targets
	# go without it when it is not installed; asked for by name, it must be.
	log "sniproxy is not installed ($SNIPROXY; Debian package sniproxy): the run goes without it"
	TARGETS=${TARGETS/,sniproxy/}
fi
wanted sniproxy && need "$SNIPROXY"
for p in $p_up_splice $p_up_bridge $p_up_stats $p_up_http $p_haproxy_http $p_nginx_http $p_snigate $p_pprof $p_snigate_base $p_snigate_x $p_pprof_x $p_haproxy $p_haproxy_bridge $p_nginx $p_nginx_bridge $p_sniproxy $p_snigate_cache $p_admin_cache $p_nginx_cache; do
	port_free "$p"
done

log "building snigate and bench/loadgen into $work"
snigate_rev="$(git rev-parse --short HEAD)$(git diff --quiet -- sni internal cmd upstream dnsresponder || echo '+dirty')"
CGO_ENABLED=0 go build -o "$work/snigate" ./cmd/snigate
go build -o "$work/loadgen" ./bench/loadgen
if wanted floor || wanted floor-server || wanted floor-transport; then
	go build -o "$work/floor" ./bench/floor
fi
if [ -n "$BASE_REV" ]; then
	# The before side of an A/B: snigate at BASE_REV, built the same way
	# (its own cmd/snigate/default.pgo), as target snigate-base.
	base_rev=$(git rev-parse --short "$BASE_REV")
	git worktree add --detach "$work/base-src" "$BASE_REV" >/dev/null 2>&1
	(cd "$work/base-src" && CGO_ENABLED=0 go build -o "$work/snigate-base" ./cmd/snigate)
	git worktree remove --force "$work/base-src"
	TARGETS="$TARGETS,snigate-base"
fi
if [ "$PROFILE" = 1 ]; then
	go build -o "$work/snigate-pprof" ./bench/snigate-pprof
	mkdir -p "$prof_dir"
fi
"$work/loadgen" certs -dir "$work"
pki=$work

# --- configurations ------------------------------------------------------------

# snigate_config PORT [KEY_EXCHANGES] [HTTP]: the gateway's configuration;
# with KEY_EXCHANGES (snigate-x25519), the bridge routes' serve and
# upstream_tls set key_exchanges, and nothing else differs; with HTTP=1,
# it has the http route too (the HTTP-aware bridge, issue 15).
snigate_config() {
	local kx= skx=
	[ -n "${2:-}" ] && kx="
      key_exchanges: [$2]" && skx=", key_exchanges: [$2]"
	cat <<EOF
listen:
  tls: ["127.0.0.1:$1"]
timeouts:
  client_hello: 5s
  connect: 5s
  idle: 1h
  drain: 1s
max_connections: $snigate_max_conns
max_connections_per_client: 0   # no limit: every bench client is 127.0.0.1 (an idle fill holds $idle_max)
routes:
  - name: splice
    sni: ["bench.example.test"]
    mode: splice
    upstreams: ["127.0.0.1:$p_up_splice"]
    health: {check: tcp, interval: 30s}
  - name: bridge
    sni: ["bridge.bench.test"]
    mode: bridge
    upstreams: ["127.0.0.1:$p_up_bridge"]
    health: {check: tls, interval: 30s}$bridge_extra
    serve: {cert: $pki/serve.crt, key: $pki/serve.key$skx}
    upstream_tls:
      cert: $pki/client.crt
      key: $pki/client.key
      ca: $pki/ca.crt
      server_name: upstream.bench.test$kx
EOF
	[ "${3:-}" = 1 ] || return 0
	cat <<EOF
  - name: http
    sni: ["registry.bench.test"]
    mode: bridge
    upstreams: ["127.0.0.1:$p_up_http"]
    health: {check: tls, interval: 30s}
    serve: {cert: $pki/serve.crt, key: $pki/serve.key$skx}
    upstream_tls:
      cert: $pki/client.crt
      key: $pki/client.key
      ca: $pki/ca.crt
      server_name: upstream.bench.test$kx
    http: {$http_extra}
EOF
}

# write_snigate_config NAME PORT [KEY_EXCHANGES]: $work/NAME.yaml with the
# http route when NAME's binary's `snigate check` accepts it (http_ok[NAME]
# = 1), else without it (the http scenarios then skip NAME; the other
# scenarios run as before).
declare -A http_ok=()
# Every bench client is 127.0.0.1: the bridge route lifts the per-client
# dial rate (dial_rate_per_client: 0) where the binary knows the key.
bridge_extra=
http_extra=
write_snigate_config() {
	local bin=$work/snigate
	[ "$1" = snigate-base ] && bin=$work/snigate-base
	bridge_extra="
    dial_rate_per_client: 0"
	snigate_config "$2" "${3:-}" >"$work/$1.yaml"
	"$bin" check -c "$work/$1.yaml" >/dev/null 2>&1 || bridge_extra=
	http_extra=${UPSTREAM_PROTOCOL:+upstream_protocol: $UPSTREAM_PROTOCOL}
	snigate_config "$2" "${3:-}" 1 >"$work/$1.yaml"
	if [ -n "$http_extra" ] && ! "$bin" check -c "$work/$1.yaml" >/dev/null 2>&1; then
		log "$1: snigate check rejects http.upstream_protocol, so its http route runs with the binary's default"
		http_extra=
		snigate_config "$2" "${3:-}" 1 >"$work/$1.yaml"
	fi
	if "$bin" check -c "$work/$1.yaml" >"$work/$1-check.log" 2>&1; then
		http_ok[$1]=1
		return 0
	fi
	log "$1: snigate check rejects the http route, so the http scenarios skip $1: $(tr '\n' ' ' <"$work/$1-check.log")"
	snigate_config "$2" "${3:-}" >"$work/$1.yaml"
}
write_snigate_config snigate "$p_snigate"
[ -n "$BASE_REV" ] && write_snigate_config snigate-base "$p_snigate_base"
write_snigate_config snigate-x25519 "$p_snigate_x" x25519

# snigate-cache: the http route with http.cache in $work (emptied
# through the admin listener's POST /api/cache/purge before each
# cache-pull round); without `snigate check`'s yes it is not started.
snigate_cache_dir=$work/cache-snigate
snigate_config "$p_snigate_cache" "" 1 |
	sed -e "s#^  tls: \[\"127.0.0.1:$p_snigate_cache\"\]#&\n  admin: \"127.0.0.1:$p_admin_cache\"#" \
		-e "s#^    http: {\(.*\)}#    http:\n      cache: {dir: $snigate_cache_dir, max_size: 4GiB}\n      \1#" >"$work/snigate-cache.yaml"
if wanted snigate-cache && ! "$work/snigate" check -c "$work/snigate-cache.yaml" >"$work/snigate-cache-check.log" 2>&1; then
	log "snigate-cache: snigate check rejects its configuration, so the cache scenarios skip it: $(tr '\n' ' ' <"$work/snigate-cache-check.log")"
	TARGETS=${TARGETS//snigate-cache/}
fi

# HAProxy: 2 threads, splice both ways (splice-request and splice-response:
# with splice-auto alone HAProxy 2.6 never spliced the download stream of
# scenario 2, strace showed recvfrom/sendto only, 8.7 against 12 Gbit/s),
# no log section (nothing logged); maxconn and maxpipes as sized from the
# descriptor limit at the top.
cat >"$work/haproxy.cfg" <<EOF
global
    nbthread 2
    maxconn $haproxy_maxconn
    maxpipes $haproxy_maxpipes
defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
    option splice-request
    option splice-response
frontend splice
    bind 127.0.0.1:$p_haproxy
    tcp-request inspect-delay 5s
    tcp-request content accept if { req_ssl_hello_type 1 }
    use_backend up_splice if { req_ssl_sni -i bench.example.test }
backend up_splice
    server s1 127.0.0.1:$p_up_splice
frontend bridge
    bind 127.0.0.1:$p_haproxy_bridge ssl crt $pki/serve.pem
    default_backend up_bridge
backend up_bridge
    server b1 127.0.0.1:$p_up_bridge ssl crt $pki/client.pem ca-file $pki/ca.crt verify required sni str(upstream.bench.test) verifyhost upstream.bench.test
# The http scenarios: an HTTP reverse proxy of the registry, reusing its
# upstream connections across clients (http-reuse always), the edge
# client certificate on the server line, the forwarding headers set from
# the client's address as snigate's http route sets them (replacing the
# client's own).
defaults
    mode http
    timeout connect 5s
    timeout client 1h
    timeout server 1h
    timeout http-request 10s
frontend http
    bind 127.0.0.1:$p_haproxy_http ssl crt $pki/serve.pem alpn http/1.1
    http-request set-header X-Forwarded-For %[src]
    http-request set-header X-Real-IP %[src]
    http-request set-header X-Forwarded-Proto https
    http-request set-header Forwarded for=%[src];proto=https
    default_backend up_http
backend up_http
    http-reuse always
    server h1 127.0.0.1:$p_up_http ssl crt $pki/client.pem ca-file $pki/ca.crt verify required sni str(upstream.bench.test) verifyhost upstream.bench.test
EOF

# nginx: 2 worker processes (reuseport spreads accepts over both), stream
# module; ssl_preread routes by SNI; bridge = stream TLS termination +
# proxy_ssl with the client certificate and upstream session reuse.
mkdir -p "$work/nginx"
cat >"$work/nginx.conf" <<EOF
load_module $NGINX_STREAM;
user root;
worker_processes 2;
worker_rlimit_nofile $FD_LIMIT;
pid $work/nginx/nginx.pid;
error_log $work/nginx.log error;
events { worker_connections $((FD_LIMIT - 100)); }
stream {
    map \$ssl_preread_server_name \$splice_upstream {
        bench.example.test 127.0.0.1:$p_up_splice;
        default            127.0.0.1:9;
    }
    server {
        listen 127.0.0.1:$p_nginx reuseport;
        ssl_preread on;
        preread_timeout 5s;
        proxy_pass \$splice_upstream;
        proxy_connect_timeout 5s;
        proxy_timeout 1h;
$([ "$NGINX_HALF_CLOSE" = 1 ] && echo "        proxy_half_close on;" || true)
    }
    server {
        listen 127.0.0.1:$p_nginx_bridge ssl reuseport;
        ssl_certificate     $pki/serve.crt;
        ssl_certificate_key $pki/serve.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:bench:10m;
        ssl_session_tickets on;
        proxy_pass 127.0.0.1:$p_up_bridge;
        proxy_connect_timeout 5s;
        proxy_timeout 1h;
        proxy_ssl on;
        proxy_ssl_certificate     $pki/client.crt;
        proxy_ssl_certificate_key $pki/client.key;
        proxy_ssl_trusted_certificate $pki/ca.crt;
        proxy_ssl_verify on;
        proxy_ssl_name upstream.bench.test;
        proxy_ssl_server_name on;
        proxy_ssl_session_reuse on;
    }
}
# The http scenarios: an HTTP reverse proxy of the registry over a pool of
# kept-alive upstream connections (upstream keepalive, HTTP/1.1 without
# Connection: close), the edge client certificate, the forwarding headers
# set from the client's address as snigate's http route sets them. A
# large blob streams through 64 KiB of buffers (issue 15's memory budget
# per request), never through temporary files (proxy_max_temp_file_size 0).
http {
    access_log off;
    upstream registry {
        server 127.0.0.1:$p_up_http;
        keepalive 64;
        keepalive_requests 1000000;
        keepalive_timeout 10m;
    }
    server {
        listen 127.0.0.1:$p_nginx_http ssl reuseport;
        server_name registry.bench.test;
        ssl_certificate     $pki/serve.crt;
        ssl_certificate_key $pki/serve.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        keepalive_requests 1000000;
        location / {
            proxy_pass https://registry;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$remote_addr;
            proxy_set_header X-Real-IP \$remote_addr;
            proxy_set_header X-Forwarded-Proto https;
            proxy_set_header Forwarded "for=\$remote_addr;proto=https";
            proxy_ssl_certificate     $pki/client.crt;
            proxy_ssl_certificate_key $pki/client.key;
            proxy_ssl_trusted_certificate $pki/ca.crt;
            proxy_ssl_verify on;
            proxy_ssl_name upstream.bench.test;
            proxy_ssl_server_name on;
            proxy_ssl_session_reuse on;
            proxy_buffer_size 16k;
            proxy_buffers 3 16k;
            proxy_busy_buffers_size 32k;
            proxy_max_temp_file_size 0;
            proxy_read_timeout 1h;
        }
    }
}
EOF

# nginx-cache: the http proxy above with proxy_cache for blobs by digest
# (the cache in $work, emptied before each cache-pull round),
# proxy_cache_lock on so that one request per blob goes to the registry
# while the others wait for the cache (lock timeout and age long enough
# for a large layer), 2 workers; everything else passes through.
nginx_cache_dir=$work/cache-nginx
mkdir -p "$work/nginx-cache" "$nginx_cache_dir"
cat >"$work/nginx-cache.conf" <<EOF
user root;
worker_processes 2;
worker_rlimit_nofile $FD_LIMIT;
pid $work/nginx-cache/nginx.pid;
error_log $work/nginx-cache.log error;
events { worker_connections 4096; }
http {
    access_log off;
    proxy_cache_path $nginx_cache_dir levels=1:2 keys_zone=blobs:10m max_size=4g inactive=1h use_temp_path=off;
    upstream registry {
        server 127.0.0.1:$p_up_http;
        keepalive 64;
        keepalive_requests 1000000;
        keepalive_timeout 10m;
    }
    server {
        listen 127.0.0.1:$p_nginx_cache ssl reuseport;
        server_name registry.bench.test;
        ssl_certificate     $pki/serve.crt;
        ssl_certificate_key $pki/serve.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        keepalive_requests 1000000;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host \$host;
        proxy_set_header X-Forwarded-For \$remote_addr;
        proxy_set_header X-Real-IP \$remote_addr;
        proxy_set_header X-Forwarded-Proto https;
        proxy_set_header Forwarded "for=\$remote_addr;proto=https";
        proxy_ssl_certificate     $pki/client.crt;
        proxy_ssl_certificate_key $pki/client.key;
        proxy_ssl_trusted_certificate $pki/ca.crt;
        proxy_ssl_verify on;
        proxy_ssl_name upstream.bench.test;
        proxy_ssl_server_name on;
        proxy_ssl_session_reuse on;
        proxy_read_timeout 1h;
        location ~ ^/v2/.+/blobs/sha256: {
            proxy_pass https://registry;
            proxy_cache blobs;
            proxy_cache_key \$uri;
            proxy_cache_valid 200 1h;
            proxy_cache_lock on;
            proxy_cache_lock_timeout 1h;
            proxy_cache_lock_age 1h;
        }
        location / {
            proxy_pass https://registry;
        }
    }
}
EOF

# sniproxy: single process, one event loop; a table with the one name; no
# access log.
cat >"$work/sniproxy.conf" <<EOF
user root
pidfile $work/sniproxy.pid
error_log {
    filename /dev/null
    priority emergency
}
listener 127.0.0.1:$p_sniproxy {
    protocol tls
    table bench
}
table bench {
    ^bench\\.example\\.test\$ 127.0.0.1:$p_up_splice
}
EOF

# --- processes -----------------------------------------------------------------

start_upstream() {
	"$work/loadgen" upstream -pki "$pki" -splice "127.0.0.1:$p_up_splice" -bridge "127.0.0.1:$p_up_bridge" \
		-stats "127.0.0.1:$p_up_stats" -http "127.0.0.1:$p_up_http" -big-blob-mib "$BIG_BLOB_MIB" -layer-mib "$LAYER_MIB" >"$work/upstream.log" 2>&1 &
	upstream_pid=$!
	wait_listen "$p_up_http" upstream # listens once the large blob's digest is computed (about 1s per GiB)
	wait_listen "$p_up_splice" upstream
	wait_listen "$p_up_bridge" upstream
}

# start_snigate NAME PORT PPROF_PORT: snigate with $work/NAME.yaml.
start_snigate() {
	if [ "$1" = snigate-base ]; then
		env GOMAXPROCS=2 $BASE_ENV "$work/snigate-base" run -c "$work/$1.yaml" --log-level warn >>"$work/$1.log" 2>&1 &
	elif [ "$PROFILE" = 1 ]; then
		GOMAXPROCS=2 "$work/snigate-pprof" -c "$work/$1.yaml" -pprof "127.0.0.1:$3" \
			-log-level warn >>"$work/$1.log" 2>&1 &
	else
		GOMAXPROCS=2 "$work/snigate" run -c "$work/$1.yaml" --log-level warn >>"$work/$1.log" 2>&1 &
	fi
	pid[$1]=$!
	wait_listen "$2" "$1"
}

# start_proxies [idle]: every wanted proxy; with idle, only those the
# idle-mem scenario measures (snigate-x25519 has no splice target).
start_proxies() {
	wanted snigate && start_snigate snigate "$p_snigate" "$p_pprof"
	wanted snigate-base && start_snigate snigate-base "$p_snigate_base" ""
	if wanted snigate-cache && [ "${1:-}" != idle ]; then
		rm -rf "$snigate_cache_dir"
		start_snigate snigate-cache "$p_snigate_cache" ""
	fi
	if wanted nginx-cache && [ "${1:-}" != idle ]; then
		"$NGINX" -c "$work/nginx-cache.conf" -p "$work/nginx-cache" -e "$work/nginx-cache.log" -g 'daemon off;' >>"$work/nginx-cache.log" 2>&1 &
		pid[nginx-cache]=$!
		wait_listen "$p_nginx_cache" nginx-cache
	fi
	if wanted snigate-x25519 && [ "${1:-}" != idle ]; then
		start_snigate snigate-x25519 "$p_snigate_x" "$p_pprof_x"
	fi
	if wanted haproxy; then
		"$HAPROXY" -db -f "$work/haproxy.cfg" >>"$work/haproxy.log" 2>&1 &
		pid[haproxy]=$!
		wait_listen "$p_haproxy_bridge" haproxy
		wait_listen "$p_haproxy_http" haproxy
	fi
	if wanted nginx; then
		"$NGINX" -c "$work/nginx.conf" -p "$work/nginx" -e "$work/nginx.log" -g 'daemon off;' >>"$work/nginx.log" 2>&1 &
		pid[nginx]=$!
		wait_listen "$p_nginx_bridge" nginx
		wait_listen "$p_nginx_http" nginx
	fi
	local m i=90
	for m in floor floor-server floor-transport; do
		i=$((i + 1))
		if wanted "$m" && [ "${1:-}" != idle ]; then
			GOMAXPROCS=2 "$work/floor" -mode "${m#floor-}" -pki "$pki" -listen "127.0.0.1:$((BASE_PORT + i))" \
				-upstream "127.0.0.1:$p_up_http" >>"$work/$m.log" 2>&1 &
			pid[$m]=$!
			wait_listen $((BASE_PORT + i)) "$m"
		fi
	done
	if wanted sniproxy; then
		"$SNIPROXY" -f -c "$work/sniproxy.conf" >>"$work/sniproxy.log" 2>&1 &
		pid[sniproxy]=$!
		wait_listen "$p_sniproxy" sniproxy
	fi
}

# http_of NAME PORT: the ",http=ADDR" of a snigate target whose
# configuration has the http route (on the same listener, SNI
# registry.bench.test), else nothing.
http_of() { [ "${http_ok[$1]:-}" = 1 ] && echo ",http=127.0.0.1:$2" || true; }

# target_flags: the loadgen -target flags, in round order.
target_flags() {
	local flags=()
	wanted direct && flags+=(-target "name=direct,splice=127.0.0.1:$p_up_splice,bridge=127.0.0.1:$p_up_bridge,http=127.0.0.1:$p_up_http,direct=1")
	if wanted snigate; then
		local extra=
		[ "$PROFILE" = 1 ] && extra=",pprof=127.0.0.1:$p_pprof"
		flags+=(-target "name=snigate,splice=127.0.0.1:$p_snigate,bridge=127.0.0.1:$p_snigate$(http_of snigate "$p_snigate"),pid=${pid[snigate]}$extra")
	fi
	wanted snigate-base && flags+=(-target "name=snigate-base,splice=127.0.0.1:$p_snigate_base,bridge=127.0.0.1:$p_snigate_base$(http_of snigate-base "$p_snigate_base"),pid=${pid[snigate-base]}")
	if wanted snigate-x25519 && [ -n "${pid[snigate-x25519]:-}" ]; then
		local extra=
		[ "$PROFILE" = 1 ] && extra=",pprof=127.0.0.1:$p_pprof_x"
		flags+=(-target "name=snigate-x25519,bridge=127.0.0.1:$p_snigate_x$(http_of snigate-x25519 "$p_snigate_x"),pid=${pid[snigate-x25519]}$extra")
	fi
	local m i=90
	for m in floor floor-server floor-transport; do
		i=$((i + 1))
		[ -n "${pid[$m]:-}" ] && flags+=(-target "name=$m,http=127.0.0.1:$((BASE_PORT + i)),pid=${pid[$m]}")
	done
	wanted haproxy && flags+=(-target "name=haproxy,splice=127.0.0.1:$p_haproxy,bridge=127.0.0.1:$p_haproxy_bridge,http=127.0.0.1:$p_haproxy_http,pid=${pid[haproxy]}")
	wanted nginx && flags+=(-target "name=nginx,splice=127.0.0.1:$p_nginx,bridge=127.0.0.1:$p_nginx_bridge,http=127.0.0.1:$p_nginx_http,pid=${pid[nginx]}")
	wanted sniproxy && flags+=(-target "name=sniproxy,splice=127.0.0.1:$p_sniproxy,pid=${pid[sniproxy]}")
	[ -n "${pid[snigate-cache]:-}" ] && flags+=(-target "name=snigate-cache,http=127.0.0.1:$p_snigate_cache,pid=${pid[snigate-cache]},purge=127.0.0.1:$p_admin_cache")
	[ -n "${pid[nginx-cache]:-}" ] && flags+=(-target "name=nginx-cache,http=127.0.0.1:$p_nginx_cache,pid=${pid[nginx-cache]},cachedir=$nginx_cache_dir")
	printf '%s\n' "${flags[@]}"
}

loadgen_run() { # loadgen_run SCENARIOS ROUNDS FIRST_ROUND
	local flags
	mapfile -t flags < <(target_flags)
	[ "$PROFILE" = 1 ] && flags+=(-pprof-dir "$prof_dir")
	[ "$PROFILE" = 1 ] && [ "$LIVE_MEM" = 1 ] && flags+=(-live-mem)
	"$work/loadgen" run -pki "$pki" -out "$results" -upstream-pid "$upstream_pid" \
		-upstream-stats "127.0.0.1:$p_up_stats" -client-groups "$CLIENT_GROUPS" \
		-scenarios "$1" -rounds "$2" -first-round "$3" -conc "$CONC" \
		-rate-time "$RATE_TIME" -lat-rate "$LAT_RATE" -hs-time "$HS_TIME" -tput-time "$TPUT_TIME" \
		-streams "$STREAMS" -http-time "$HTTP_TIME" -http-streams "$HTTP_STREAMS" \
		-idle-counts "${IDLE_RUN:-$idle_counts}" -idle-reads "$IDLE_READS" -layer-mib "$LAYER_MIB" -pull-nodes "$PULL_NODES" -cache-streams "$CACHE_STREAMS" "${flags[@]}"
}

# Everything but idle-mem, or the scenarios asked for.
main_scenarios() {
	local s out=()
	IFS=, read -ra list <<<"$SCENARIOS"
	for s in "${list[@]}"; do
		if [ "$s" = all ]; then
			out+=(splice-rate splice-latency splice-tput bridge-full bridge-resumed bridge-tput http-manifest http-blobs http-bigblob cache-pull cache-hit)
		elif [[ $s != idle-mem* && $s != dns && $s != auth && $s != verify && $s != fleet ]]; then # those have their own scripts
			out+=("$s")
		fi
	done
	local IFS=,
	echo "${out[*]}"
}

wants_idle() { [[ ",$SCENARIOS," == *",idle-mem"* || ",$SCENARIOS," == *",all,"* ]]; }

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start_upstream

# Scenarios 1-4 on freshly started proxies, rounds interleaved.
main=$(main_scenarios)
if [ -n "$main" ]; then
	start_proxies
	log "scenarios $main: $ROUNDS rounds over targets $TARGETS"
	loadgen_run "$main" "$ROUNDS" 1
	stop_proxies
fi

# Scenario 5: every fill (each count, each round) on freshly started
# proxies, so that memory freed by earlier connections (allocator caches,
# Go's heap) does not hide the cost of new ones, and every reading is of
# a fill that has just ended. Rounds interleave as elsewhere: round 1 of
# every count, then round 2.
idle_wall=
if wants_idle; then
	[ -n "$idle_capped" ] && log "idle-mem: $idle_capped (descriptor limit $FD_LIMIT per process, 2 sockets per tunnel in a proxy)"
	idle_start=$(date +%s)
	for r in $(seq "$ROUNDS"); do
		for n in ${idle_counts//,/ }; do
			start_proxies idle
			log "idle-mem round $r: $n idle tunnels per proxy, RSS read $IDLE_READS after the last opened (fd limit $FD_LIMIT)"
			IDLE_RUN=$n loadgen_run idle-mem 1 "$r"
			stop_proxies
		done
	done
	idle_wall=$(($(date +%s) - idle_start))
	log "idle-mem: ${idle_wall}s for $ROUNDS round(s) of fills of $idle_counts"
fi

# Scenario 6: DNS, owned by bench/dns/run.sh.
: >"$work/dns.txt"
if [ "$DNS" = 1 ] && [ -x bench/dns/run.sh ] && [[ ",$SCENARIOS," == *",all,"* || ",$SCENARIOS," == *",dns,"* ]]; then
	log "DNS: bench/dns/run.sh"
	bench/dns/run.sh 2>&1 | tee "$work/dns.txt" || echo "bench/dns/run.sh failed (exit $?)" >>"$work/dns.txt"
fi
# Registry credentials at the gateway (issue 30), owned by bench/auth/run.sh;
# only when SCENARIOS names auth.
if [ -x bench/auth/run.sh ] && [[ ",$SCENARIOS," == *",auth,"* ]]; then
	log "auth: bench/auth/run.sh"
	ROUNDS=$ROUNDS HTTP_TIME=$HTTP_TIME CONC=$CONC BASE_PORT=$((BASE_PORT + 100)) bench/auth/run.sh 2>&1 | tee "$work/auth.txt" ||
		echo "bench/auth/run.sh failed (exit $?)"
fi
# Signature policy (issue 32), owned by bench/verify/run.sh.
if [ -x bench/verify/run.sh ] && [[ ",$SCENARIOS," == *",all,"* || ",$SCENARIOS," == *",verify,"* ]]; then
	log "verify: bench/verify/run.sh"
	ROUNDS=$ROUNDS bench/verify/run.sh 2>&1 | tee "$work/verify.txt" || echo "bench/verify/run.sh failed (exit $?)" >>"$work/verify.txt"
fi
# The fleet scenarios (issue 31), owned by bench/fleet/run.sh: only when
# SCENARIOS names fleet (its own gateways, registry and SeaweedFS).
if [[ ",$SCENARIOS," == *",fleet,"* ]] && [ -x bench/fleet/run.sh ]; then
	log "fleet: bench/fleet/run.sh"
	ROUNDS=$ROUNDS LAYER_MIB=$LAYER_MIB PULL_NODES=$PULL_NODES STREAMS=$CACHE_STREAMS OUT="$out_dir/fleet-$stamp.md" \
		bench/fleet/run.sh || log "bench/fleet/run.sh failed (exit $?)"
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report --------------------------------------------------------------------

version_of() { "$@" 2>&1 | head -1; }
{
	echo "# snigate side-by-side benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "## Machine"
	echo
	echo "- $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r)"
	echo "- load average at start $load_start, at end $load_end (the machine is shared: prefer the ratios)"
	echo "- descriptor limit per process: $FD_LIMIT (hard limit $(ulimit -Hn)${fd_raise:+, $fd_raise}; fs.nr_open $nr_open)"
	echo "- $(version_of "$HAPROXY" -v); $(version_of "$NGINX" -v); $(wanted sniproxy && version_of "$SNIPROXY" -V || echo 'sniproxy not in this run'); $(go version); snigate $snigate_rev (at build time)"
	echo
	echo "## Settings"
	echo
	echo "- a measurement during which other work on the machine used more than half a core is taken again (at most twice, 90s in all per loadgen run); the attempt with the least other work is kept"
	echo "- rounds $ROUNDS, interleaved A B C D ...; concurrency $CONC; splice rate $RATE_TIME (closed loop) and splice latency at $LAT_RATE conn/s for $RATE_TIME (open loop, latency from each connection's due time), handshakes $HS_TIME, throughput $TPUT_TIME per measurement; throughput streams $STREAMS"
	wants_idle && echo "- idle memory: fills of $idle_counts tunnels per proxy (64 openers, each tunnel verified end to end by the upstream's byte), every fill on freshly started proxies after 200 warm-up tunnels, RSS read $IDLE_READS after the last tunnel opened$([ -n "$idle_wall" ] && echo "; the scenario took ${idle_wall}s")"
	wants_idle && [ -n "$idle_capped" ] && echo "- idle counts requested $IDLE_COUNTS: $idle_capped, the largest fill that fits the descriptor limit of $FD_LIMIT per process (a proxy holds 2 sockets per tunnel; HAProxy's maxconn $haproxy_maxconn)"
	echo "- snigate: GOMAXPROCS=2, --log-level warn (it logs one line per connection at info)$([ "$PROFILE" = 1 ] && echo ', run as bench/snigate-pprof (pprof endpoint on)'); built with cmd/snigate/default.pgo when present (go build's -pgo=auto)"
	wanted snigate-x25519 && echo "- snigate-x25519: the same binary and settings, a separate process; its bridge and http routes add serve.key_exchanges and upstream_tls.key_exchanges [x25519] (X25519 on both legs, as OpenSSL 3.0 gives HAProxy and nginx, although the clients offer the hybrid first); bridge and http scenarios only"
	echo "- HAProxy: nbthread 2, option splice-request + splice-response (maxpipes 256; splice-auto alone did not splice the download stream), no log; bridge = ssl crt bind + server ssl crt client.pem ca-file (backend session reuse on by default)"
	echo "- nginx: worker_processes 2 (reuseport), stream ssl_preread + proxy_pass$([ "$NGINX_HALF_CLOSE" = 1 ] && echo ", proxy_half_close on (NGINX_HALF_CLOSE=1)" || echo ", proxy_half_close off (its default: a FIN from either side closes both)"); bridge = stream ssl + proxy_ssl_certificate, proxy_ssl_session_reuse on; no access log"
	echo "- sniproxy: one process (single-threaded by design), table with the name, no access log; splice scenarios only"
	echo "- http scenarios (7): the registry is a Go net/http server (mTLS, h2 and http/1.1 by ALPN; 16 small blobs of 4 KiB, a large blob of $BIG_BLOB_MIB MiB generated from a pattern); the client is Go net/http speaking HTTP/1.1 to every target (ALPN http/1.1 only, although snigate also offers h2), fresh connections without session cache in http-manifest, keep-alive ones otherwise; $HTTP_TIME per http-manifest and http-blobs measurement, the large blob over $HTTP_STREAMS connection(s) for $TPUT_TIME; every proxy sets X-Forwarded-For, X-Real-IP, X-Forwarded-Proto and Forwarded from the client's address"
	echo "- http targets: snigate = a bridge route with http: {} on the same listener (upstream leg: its own pool, h2 as the registry offers it)$([ "${http_ok[snigate]:-}" = 1 ] || echo ', not in this run: snigate check rejected the http route'); nginx = http proxy_pass https:// to an upstream block with keepalive 64, proxy_http_version 1.1, Connection \"\", proxy_ssl_certificate, 16k buffers and no temporary files; HAProxy = mode http, http-reuse always, ssl crt on the server line (both HTTP/1.1 upstream)"
	echo "- cache scenarios (8): a layer of $LAYER_MIB MiB (generated from a pattern, its digest the sha256 of its bytes, as the caches verify); cache-pull: $PULL_NODES nodes GET it at once over fresh HTTP/1.1 connections with the target's cache emptied first (snigate-cache: POST /api/cache/purge; nginx-cache: its directory), registry bytes counted in the registry's handler (in layers), CPU per GB over the bytes the nodes got; cache-hit: after one GET, $CACHE_STREAMS keep-alive streams download it for $TPUT_TIME; snigate-cache = the http route with http.cache {dir in the run's directory, max_size 4GiB}; nginx-cache = the http proxy with proxy_cache (levels 1:2, use_temp_path off) for blobs by digest, proxy_cache_lock on (timeout and age 1h), proxy_cache_valid 200 1h; verdicts against snigate's http route without a cache (target: registry at most 1 layer, CPU per GB at most and throughput at least the bridge's without cache)"
	echo "- splice scenarios send a ClientHello captured from this Go version's crypto/tls (X25519MLKEM768 + X25519 key shares) followed by a command; bridge scenarios run crypto/tls clients (ECDSA P-256 certificates, TLS 1.3) offering $([ "$CLIENT_GROUPS" = x25519 ] && echo 'only X25519' || echo "Go's default groups (X25519MLKEM768 first)"); the upstream is a Go crypto/tls server requiring a client certificate"
} >"$work/header.md"

report="$out_dir/results-$stamp.md"
"$work/loadgen" report -in "$results" -header "$work/header.md" -dns "$work/dns.txt" -out "$report" \
	-threads snigate=2,snigate-base=2,snigate-x25519=2,snigate-cache=2,haproxy=2,nginx=2,nginx-cache=2,sniproxy=1 \
	-subject "snigate,snigate-x25519,snigate-cache${BASE_REV:+,snigate-base}"
{
	echo
	echo "## Configurations"
	for f in snigate.yaml snigate-x25519.yaml snigate-cache.yaml haproxy.cfg nginx.conf nginx-cache.conf sniproxy.conf; do
		[ -e "$work/$f" ] || continue
		printf '\n### %s\n\n```\n' "$f"
		sed "s#$work#\$WORK#g" "$work/$f"
		printf '```\n'
	done
} >>"$report"
cp "$results" "$out_dir/results-$stamp.jsonl"
cp "$work/header.md" "$out_dir/results-$stamp.header.md"
cp "$work/dns.txt" "$out_dir/results-$stamp.dns.txt"
[ ! -e "$work/verify.txt" ] || cp "$work/verify.txt" "$out_dir/results-$stamp.verify.txt"
log "wrote $report"
[ "$PROFILE" = 1 ] && log "profiles in $prof_dir"
exit 0
