#!/usr/bin/env bash
# compare-security.sh: what the default security (mutual TLS between nodes,
# encrypted gossip) costs on the durable write path, in one run.
#
# Runs the same 3-node cluster and KV put workload (durable, replicated,
# 256-byte values) twice per round, once secure (the default) and once with
# --insecure, alternating ROUNDS times so that the machine's drift hits
# both alike, and prints throughput and latency with the ratio secure /
# insecure. Every JSON report goes to $OUT.
#
#   DURATION=10s ROUNDS=2 scripts/bench/compare-security.sh
#
# Environment (defaults in brackets):
#   DURATION [10s]     measured time of each run
#   WARMUP [2s]        unmeasured time before each run
#   CLIENTS [64]       closed-loop clients
#   ROUNDS [2]         secure/insecure pairs
#   VALUE_SIZE [256]   value size in bytes
#   OUT, WORKDIR, PARLEY_BIN, KEEP_DATA as in lib.sh
set -euo pipefail

DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
CLIENTS=${CLIENTS:-64}
ROUNDS=${ROUNDS:-2}
VALUE_SIZE=${VALUE_SIZE:-256}
NAME=compare-security
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

apt_install jq jq
apt_install curl curl
build_parley
machine_info | tee "$OUT/machine.txt" >&2

# run MODE ROUND: one cluster in MODE (secure or insecure), one measured run.
run() {
	local mode=$1 round=$2 flags=""
	[[ $mode == insecure ]] && flags=--insecure
	PARLEY_SERVE_FLAGS=$flags start_parley
	log "$mode round $round: $CLIENTS clients for $DURATION"
	"$parley" bench kv --servers "$parley_urls" --clients "$CLIENTS" --duration "$DURATION" --warmup "$WARMUP" \
		--value-size "$VALUE_SIZE" --json "$OUT/$mode-$round.json" -q >"$OUT/$mode-$round.txt"
	stop_all
	rm -rf "$tmp/parley" "$tmp/parley-config"
}

for ((r = 1; r <= ROUNDS; r++)); do
	run secure "$r"
	run insecure "$r"
done

{
	printf '%-6s | %-28s | %-28s | %s\n' round "secure (default)" "--insecure" "secure / insecure"
	printf '%-6s | %9s %8s %8s | %9s %8s %8s | %7s %7s %7s\n' "" "ops/s" "p50 ms" "p99 ms" "ops/s" "p50 ms" "p99 ms" "ops/s" "p50" "p99"
	so=0 io=0
	for ((r = 1; r <= ROUNDS; r++)); do
		s=$OUT/secure-$r.json i=$OUT/insecure-$r.json
		a=$(figure "$s" ops_per_s) b=$(figure "$i" ops_per_s)
		printf '%-6s | %9.0f %8.2f %8.2f | %9.0f %8.2f %8.2f | %7s %7s %7s\n' "$r" \
			"$a" "$(figure "$s" p50)" "$(figure "$s" p99)" "$b" "$(figure "$i" p50)" "$(figure "$i" p99)" \
			"$(ratio "$a" "$b")" "$(ratio "$(figure "$s" p50)" "$(figure "$i" p50)")" "$(ratio "$(figure "$s" p99)" "$(figure "$i" p99)")"
		so=$(awk -v x="$so" -v y="$a" 'BEGIN { print x + y }') io=$(awk -v x="$io" -v y="$b" 'BEGIN { print x + y }')
	done
	printf '\nall rounds: secure %.0f ops/s, insecure %.0f ops/s, ratio %s (%d clients, %s values, %s each)\n' \
		"$(awk -v x="$so" -v n="$ROUNDS" 'BEGIN { print x / n }')" "$(awk -v x="$io" -v n="$ROUNDS" 'BEGIN { print x / n }')" \
		"$(ratio "$so" "$io")" "$CLIENTS" "$VALUE_SIZE" "$DURATION"
} | tee "$OUT/summary.txt"
