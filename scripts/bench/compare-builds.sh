#!/usr/bin/env bash
# compare-builds.sh: two or more builds of Parley against each other on the
# same durable KV put workload, in one sitting, runs alternating.
#
# A change to the write path is judged by what it does to throughput and to
# the servers' CPU per put, and on a shared machine one run of each build
# proves little. This starts a fresh 3-node cluster of each build in turn,
# in the order A B … B A (ROUNDS times A B …, every other round reversed, so
# that a drift of the machine weighs on every build alike), runs `parley
# bench kv` against it, and prints each run and, per build, the medians and
# their ratio to the first build's. Every report goes to $OUT.
#
#   BINS="/tmp/parley-main /tmp/parley-change" scripts/bench/compare-builds.sh
#
# Environment (defaults in brackets):
#   BINS                 the parley binaries, first the baseline (required)
#   ROUNDS [2]           rounds; each runs every build once
#   CLIENTS [256]        closed-loop clients of each run
#   DURATION [15s]       measured time of each run
#   WARMUP [1s]          unmeasured time before each run
#   VALUE_SIZE [256]     value size in bytes
#   OUT, WORKDIR, KEEP_DATA, ROUTE as for compare-etcd.sh (lib.sh)
set -euo pipefail

ROUNDS=${ROUNDS:-2}
CLIENTS=${CLIENTS:-256}
DURATION=${DURATION:-15s}
WARMUP=${WARMUP:-1s}
VALUE_SIZE=${VALUE_SIZE:-256}
NAME=compare-builds
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

read -r -a bins <<<"${BINS:-}"
((${#bins[@]} >= 2)) || die "BINS: name at least two parley binaries, the baseline first"
for b in "${bins[@]}"; do
	[[ -x $b ]] || die "BINS: $b is not an executable file"
done
apt_install jq jq
apt_install curl curl
ports_free "${PARLEY_HTTP_PORTS[@]}" "${PARLEY_CLUSTER_PORTS[@]}"

{
	machine_info
	echo "builds: ${bins[*]}"
	echo "rounds: $ROUNDS, clients: $CLIENTS, duration: $DURATION, warmup: $WARMUP, value size: $VALUE_SIZE"
	route_info
} | tee "$OUT/machine.txt" >&2

# run B R: one run of build B (its index in bins) in round R, on a fresh
# cluster; its report is $OUT/bB-rR.json, its servers' CPU ticks over the
# run (warm-up included) $OUT/bB-rR.ticks.
run() {
	local b=$1 r=$2 t0 t1
	parley=${bins[b]}
	start_parley
	log "round $r: ${bins[b]}, $CLIENTS clients for $DURATION"
	t0=$(procs_ticks "${parley_pids[@]}")
	"$parley" bench kv --servers "$parley_urls" "$(route_flag)" --clients "$CLIENTS" --duration "$DURATION" \
		--warmup "$WARMUP" --value-size "$VALUE_SIZE" --json "$OUT/b$b-r$r.json" -q >"$OUT/b$b-r$r.txt"
	t1=$(procs_ticks "${parley_pids[@]}")
	echo $((t1 - t0)) >"$OUT/b$b-r$r.ticks"
	stop_all
	rm -rf "$tmp/parley" "$tmp/parley-config" # the next build starts a cluster of its own
}

for ((r = 1; r <= ROUNDS; r++)); do
	if ((r % 2)); then
		for ((b = 0; b < ${#bins[@]}; b++)); do run "$b" "$r"; done
	else
		for ((b = ${#bins[@]} - 1; b >= 0; b--)); do run "$b" "$r"; done
	fi
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt" >&2

# --- summary -------------------------------------------------------------

hz=$(getconf CLK_TCK)
# us_per_put B R: the servers' CPU µs per measured put of a run.
us_per_put() {
	awk -v t="$(cat "$OUT/b$1-r$2.ticks")" -v n="$(figure "$OUT/b$1-r$2.json" ops)" -v hz="$hz" \
		'BEGIN { if (n > 0) printf "%.0f", t / hz * 1e6 / n; else print "-" }'
}
{
	printf '%-6s %-5s | %10s %9s %9s | %12s | %s\n' build round "puts/s" "p50 ms" "p99 ms" "server us/put" binary
	for ((b = 0; b < ${#bins[@]}; b++)); do
		for ((r = 1; r <= ROUNDS; r++)); do
			f=$OUT/b$b-r$r.json
			printf '%-6s %-5s | %10.0f %9.2f %9.2f | %12s | %s\n' "$((b + 1))" "$r" "$(figure "$f" ops_per_s)" \
				"$(figure "$f" p50)" "$(figure "$f" p99)" "$(us_per_put "$b" "$r")" "${bins[b]}"
		done
	done
	echo
	printf '%-6s | %14s %18s | %14s %18s\n' build "median puts/s" "÷ build 1" "median us/put" "÷ build 1"
	base_ops="" base_us=""
	for ((b = 0; b < ${#bins[@]}; b++)); do
		ops=() us=()
		for ((r = 1; r <= ROUNDS; r++)); do
			ops+=("$(figure "$OUT/b$b-r$r.json" ops_per_s)")
			us+=("$(us_per_put "$b" "$r")")
		done
		mo=$(median "${ops[@]}") mu=$(median "${us[@]}")
		[[ -n $base_ops ]] || base_ops=$mo base_us=$mu
		printf '%-6s | %14.0f %18s | %14.0f %18s\n' "$((b + 1))" "$mo" "$(ratio "$mo" "$base_ops")" "$mu" "$(ratio "$mu" "$base_us")"
	done
	echo
	echo "server us/put: the three servers' CPU time over the run (warm-up included) over the measured puts."
} | tee "$OUT/summary.txt"
log "reports in $OUT"
