#!/usr/bin/env bash
# Signature policy (issue 32): the cost of a verified manifest request,
# first decision and remembered decision, against the same snigate http
# route without verify, in the same run, in interleaved rounds (plain-tag,
# verify-cached, plain-digest, verify-first, plain-tag, ...). Everything
# on 127.0.0.1: bench/verify/verifybench starts a registry of N images
# signed with cosign's signature tag form (ECDSA P-256) and snigate with
# two routes to it, "plain" (http: {}) and "verify" (http.verify with the
# signing key), and drives both with keep-alive HTTP/1.1 clients.
#
#   bench/verify/run.sh                      # 3 rounds of 3s, 8 connections
#   ROUNDS=1 DURATION=1s bench/verify/run.sh # a quick look
#   CONC=32 IMAGES=100000 bench/verify/run.sh
#
# A first decision needs a digest never decided before: each verify-first
# request takes the next of the IMAGES signed images (its baseline,
# plain-digest, asks the same manifests by digest in turn, again and again:
# the route without verify keeps nothing). A verify-first measurement that
# runs out of them stops early and says so; raise IMAGES.
# The client shares the CPUs with snigate and the registry: on a 2-core
# machine the figures are a ratio of the two routes, not a capacity.
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-3s}
CONC=${CONC:-8}
IMAGES=${IMAGES:-40000}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "building snigate and bench/verify/verifybench"
go build -o "$work/snigate" ./cmd/snigate
go build -o "$work/verifybench" ./bench/verify/verifybench
"$work/verifybench" -snigate "$work/snigate" -dir "$work" -rounds "$ROUNDS" -time "$DURATION" -conc "$CONC" -images "$IMAGES"
