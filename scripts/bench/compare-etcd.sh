#!/usr/bin/env bash
# compare-etcd.sh: Parley against etcd 3.4 on this machine, in one run.
#
# Measures this disk's fsync time (1 writer and 3 in parallel), then runs the
# same replicated, durable KV put workload (HTTP/1.1 + JSON, same keys, same
# 256-byte values, same client code) against a 3-member etcd cluster and a
# 3-node Parley cluster, both on loopback, and prints a comparison table with
# the ratios of the performance targets (docs/BENCHMARKS.md, "Targets"). Every JSON report goes
# to $OUT.
#
# Run from anywhere in the repository, as root on a fresh Debian machine
# (etcd-server and etcd-client are installed with apt-get when missing; Go is
# needed to build parley and parley-bench unless PARLEY_BIN and
# PARLEY_BENCH_BIN name built binaries):
#
#   DURATION=8s scripts/bench/compare-etcd.sh
#
# Environment (defaults in brackets):
#   DURATION [10s]       measured time of each run
#   WARMUP [1s]          unmeasured time before each run
#   CLIENTS ["1 64 256"] client counts; each is one run per system
#   VALUE_SIZE [256]     value size in bytes (also the fsync write size)
#   FSYNC_COUNT [2000]   syncs per file in the fsync baseline
#   OUT [./bench-results/<UTC timestamp>]  where reports and logs go
#   WORKDIR [/var/tmp]   parent of the temporary data directories: the disk
#                        under test (not a tmpfs)
#   PARLEY_BIN           use this parley binary instead of building one
#   PARLEY_BENCH_BIN     use this parley-bench binary (etcd-kv) likewise
#   KEEP_DATA [0]        1: keep the temporary data directories
#   ROUTE [1]            1: Parley's clients send each put to the node leading
#                        its key's partition (parley bench kv --route, the
#                        Go client's Pool); 0: round-robin over the nodes, as
#                        etcd's clients go, each node forwarding to the leader
#   PPROF [0]            1: serve each Parley node's Go profiles on 127.0.0.1
#                        at its HTTP port + 5 (see lib.sh's start_parley)
set -euo pipefail

DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-1s}
CLIENTS=${CLIENTS:-"1 64 256"}
VALUE_SIZE=${VALUE_SIZE:-256}
FSYNC_COUNT=${FSYNC_COUNT:-2000}
NAME=compare-etcd
# Loopback ports for etcd, away from its defaults and below Linux's
# ephemeral range (32768-60999); Parley's are lib.sh's.
ETCD_CLIENT_PORTS=(22379 22389 22399)
ETCD_PEER_PORTS=(22380 22390 22400)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# machine_cpu prints the machine's busy and total CPU time so far, in
# clock ticks (idle, iowait and steal are not busy).
machine_cpu() {
	awk '/^cpu / { t = $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; print t - $5 - $6 - $9, t }' /proc/stat
}

# servers_cpu prints the CPU time, in clock ticks, used so far by the
# servers started here (utime + stime).
servers_cpu() {
	local pid sum=0 t
	for pid in "${pids[@]}"; do
		t=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0)
		sum=$((sum + t))
	done
	echo "$sum"
}

# measure NAME CMD...: runs the benchmark CMD with its text report in
# $OUT/NAME.txt, and writes to $OUT/NAME.cpu how busy the machine was over
# the run (warm-up included), how many cores the servers used and how many
# the load generator, CMD itself, used.
measure() {
	local name=$1 m0 m1 s0 s1 k0 k1 t0 t1
	shift
	m0=$(machine_cpu) s0=$(servers_cpu) k0=$(children_ticks) t0=$(date +%s.%N)
	"$@" >"$OUT/$name.txt"
	k1=$(children_ticks) m1=$(machine_cpu) s1=$(servers_cpu) t1=$(date +%s.%N)
	awk -v m0="$m0" -v m1="$m1" -v s0="$s0" -v s1="$s1" -v k="$((k1 - k0))" -v t0="$t0" -v t1="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN {
		split(m0, a, " "); split(m1, b, " ")
		printf "busy_pct %.0f\nserver_cores %.2f\nclient_cores %.2f\n", 100 * (b[1] - a[1]) / (b[2] - a[2]), (s1 - s0) / hz / (t1 - t0), k / hz / (t1 - t0)
	}' >"$OUT/$name.cpu"
}

# cpu NAME FIELD prints a figure measure noted.
cpu() { awk -v f="$2" '$1 == f { print $2 }' "$OUT/$1.cpu"; }

# per_op NAME FIELD prints the CPU µs per operation of run NAME that the
# cores FIELD (server_cores or client_cores) stand for.
per_op() { ratio "$(cpu "$1" "$2")e6" "$(figure "$OUT/$1.json" ops_per_s)" | cut -d. -f1; }

# --- tools ---------------------------------------------------------------

apt_install jq jq
apt_install curl curl
apt_install etcd etcd-server etcd-client
apt_install etcdctl etcd-client
stop_service etcd
etcd_version=$(etcd --version | sed -n 's/^etcd Version: //p')
[[ $etcd_version == 3.4.* ]] || log "warning: etcd $etcd_version, not 3.4: the gateway path /v3 still works from 3.4 on"
build_parley
build_parley_bench

ports_free "${ETCD_CLIENT_PORTS[@]}" "${ETCD_PEER_PORTS[@]}" "${PARLEY_HTTP_PORTS[@]}" "${PARLEY_CLUSTER_PORTS[@]}"

fstype=$(df -PT "$tmp" | awk 'NR == 2 { print $2 }')
[[ $fstype != tmpfs ]] || die "$WORKDIR is a tmpfs: set WORKDIR to a directory on the disk under test"

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "host: $(uname -srm)"
	echo "cpus: $(nproc)"
	echo "memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "disk: $(df -PhT "$tmp" | awk 'NR == 2 { print $1 ", " $2 ", " $3 " (" $4 " used, " $5 " free)" }')"
	echo "etcd: $etcd_version"
	if [[ -n ${PARLEY_BIN:-} ]]; then
		echo "parley: $PARLEY_BIN (prebuilt)"
	else
		echo "parley: built from $(cd "$repo" && git describe --always --dirty 2>/dev/null || echo "an unknown commit")"
	fi
	echo "go: $(go version 2>/dev/null || echo n/a)"
	echo "duration: $DURATION, warmup: $WARMUP, clients: $CLIENTS, value size: $VALUE_SIZE"
	route_info
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/machine.txt" >&2
if awk -v n="$(nproc)" '{ exit !($1 > n / 2) }' /proc/loadavg; then
	log "warning: load average $(cut -d' ' -f1 /proc/loadavg) on $(nproc) CPUs: other work will distort the results"
fi

# --- fsync baseline ------------------------------------------------------

fsync() { # fsync NAME PARALLEL
	"$parley" bench fsync --dir "$tmp" --count "$FSYNC_COUNT" --size "$VALUE_SIZE" --parallel "$2" \
		--json "$OUT/$1.json" -q >"$OUT/$1.txt"
}
log "fsync baseline in $tmp: 1 writer, then 3 in parallel"
fsync fsync-1 1
fsync fsync-3 3

# --- etcd ----------------------------------------------------------------

etcd_initial=""
etcd_endpoints=""
for i in 0 1 2; do
	etcd_initial+="${etcd_initial:+,}e$((i + 1))=http://127.0.0.1:${ETCD_PEER_PORTS[i]}"
	etcd_endpoints+="${etcd_endpoints:+,}http://127.0.0.1:${ETCD_CLIENT_PORTS[i]}"
done
log "starting etcd: 3 members on $etcd_endpoints"
for i in 0 1 2; do
	c=http://127.0.0.1:${ETCD_CLIENT_PORTS[i]}
	p=http://127.0.0.1:${ETCD_PEER_PORTS[i]}
	start "etcd-$((i + 1))" etcd --name "e$((i + 1))" --data-dir "$tmp/etcd/e$((i + 1))" \
		--listen-client-urls "$c" --advertise-client-urls "$c" \
		--listen-peer-urls "$p" --initial-advertise-peer-urls "$p" \
		--initial-cluster "$etcd_initial" --initial-cluster-state new --initial-cluster-token parley-compare \
		--logger zap --log-level warn
done
for ((i = 0; ; i++)); do
	ETCDCTL_API=3 etcdctl --endpoints="$etcd_endpoints" --command-timeout=2s endpoint health >/dev/null 2>&1 && break
	((i < 120)) || die "etcd did not become healthy in 60 s; see $OUT/logs/etcd-*.log"
	sleep 0.5
done
ETCDCTL_API=3 etcdctl --endpoints="$etcd_endpoints" endpoint status -w table >"$OUT/logs/etcd-status.txt" 2>&1 || true

for c in $CLIENTS; do
	log "etcd: $c clients for $DURATION"
	measure "etcd-c$c" "$parley_bench" etcd-kv --endpoints "$etcd_endpoints" --clients "$c" --duration "$DURATION" \
		--warmup "$WARMUP" --value-size "$VALUE_SIZE" --json "$OUT/etcd-c$c.json" --svg "$OUT/etcd-c$c.svg" -q
done
log "stopping etcd"
stop_all

# --- Parley --------------------------------------------------------------

start_parley
curl -fsS --max-time 5 -H "Authorization: Bearer $PARLEY_TOKEN" "http://127.0.0.1:${PARLEY_HTTP_PORTS[0]}/api/v1/cluster" >"$OUT/logs/parley-cluster.json" || true
"$parley" cluster status --server "http://127.0.0.1:${PARLEY_HTTP_PORTS[0]}" >"$OUT/logs/parley-status.txt" 2>&1 || true

for c in $CLIENTS; do
	log "parley: $c clients for $DURATION"
	measure "parley-c$c" "$parley" bench kv --servers "$parley_urls" "$(route_flag)" --clients "$c" --duration "$DURATION" \
		--warmup "$WARMUP" --value-size "$VALUE_SIZE" --json "$OUT/parley-c$c.json" --svg "$OUT/parley-c$c.svg" -q
done
log "stopping parley"
stop_all

log "fsync again, after the runs: 1 writer, then 3 in parallel"
fsync fsync-1-after 1
fsync fsync-3-after 3
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt" >&2

# --- summary -------------------------------------------------------------

{
	f1=$(figure "$OUT/fsync-1.json" p50)
	f3=$(figure "$OUT/fsync-3.json" p50)
	printf 'fsync of %d bytes on %s (%s): p50 %.3f ms, p99 %.3f ms with 1 writer; p50 %.3f ms, p99 %.3f ms with 3 in parallel\n' \
		"$VALUE_SIZE" "$WORKDIR" "$fstype" "$f1" "$(figure "$OUT/fsync-1.json" p99)" "$f3" "$(figure "$OUT/fsync-3.json" p99)"
	printf 'after the runs:                          p50 %.3f ms, p99 %.3f ms with 1 writer; p50 %.3f ms, p99 %.3f ms with 3 in parallel\n\n' \
		"$(figure "$OUT/fsync-1-after.json" p50)" "$(figure "$OUT/fsync-1-after.json" p99)" \
		"$(figure "$OUT/fsync-3-after.json" p50)" "$(figure "$OUT/fsync-3-after.json" p99)"
	printf '%-8s | %-30s | %-30s | %-16s | %s\n' "" "etcd $etcd_version" "parley" "parley / etcd" "p50 / fsync p50"
	printf '%-8s | %10s %9s %9s | %10s %9s %9s | %7s %8s | %8s %8s %8s\n' \
		clients "ops/s" "p50 ms" "p99 ms" "ops/s" "p50 ms" "p99 ms" "ops/s" "p99" "etcd" "parley" "par/3fs"
	for c in $CLIENTS; do
		e=$OUT/etcd-c$c.json
		p=$OUT/parley-c$c.json
		eo=$(figure "$e" ops_per_s) e50=$(figure "$e" p50) e99=$(figure "$e" p99)
		po=$(figure "$p" ops_per_s) p50=$(figure "$p" p50) p99=$(figure "$p" p99)
		printf '%-8s | %10.0f %9.2f %9.2f | %10.0f %9.2f %9.2f | %7s %8s | %8s %8s %8s\n' \
			"$c" "$eo" "$e50" "$e99" "$po" "$p50" "$p99" \
			"$(ratio "$po" "$eo")" "$(ratio "$p99" "$e99")" "$(ratio "$e50" "$f1")" "$(ratio "$p50" "$f1")" "$(ratio "$p50" "$f3")"
		peer_errors etcd "$e" "$p"
	done
	echo
	printf '%-8s | %-46s | %-46s\n' "" "etcd CPU" "parley CPU"
	printf '%-8s | %7s %12s %12s %12s | %7s %12s %12s %12s\n' clients "busy %" "server cores" "server us/op" "client us/op" \
		"busy %" "server cores" "server us/op" "client us/op"
	for c in $CLIENTS; do
		printf '%-8s | %7s %12s %12s %12s | %7s %12s %12s %12s\n' "$c" \
			"$(cpu "etcd-c$c" busy_pct)" "$(cpu "etcd-c$c" server_cores)" "$(per_op etcd-c"$c" server_cores)" "$(per_op etcd-c"$c" client_cores)" \
			"$(cpu "parley-c$c" busy_pct)" "$(cpu "parley-c$c" server_cores)" "$(per_op parley-c"$c" server_cores)" "$(per_op parley-c"$c" client_cores)"
	done
	echo "busy %: the whole machine over the run, warm-up included (the load generator runs here too);"
	echo "server cores: CPU time of the 3 server processes per second of run; server us/op: that over ops/s;"
	echo "client us/op: the load generator's CPU time over its ops (etcd's Go client over gRPC, Parley's over HTTP)."
	echo
	echo "where a parley put's time went (the leaders' parley_raft_proposal_phase_seconds over the run, ms):"
	printf '%-8s | %-8s %9s %9s %9s\n' clients phase mean p50 p99
	for c in $CLIENTS; do
		jq -r --arg c "$c" '.params as $p | ("queue", "append", "quorum", "apply", "answer", "total")
			| . as $k | ($p["phase_" + $k] // empty)
			| [$c, $k, (capture("mean (?<m>[0-9.]+), p50 (?<a>[0-9.]+), p99 (?<b>[0-9.]+)") | .m, .a, .b)]
			| @tsv' "$OUT/parley-c$c.json" | awk -F '\t' '{ printf "%-8s | %-8s %9s %9s %9s\n", $1, $2, $3, $4, $5 }'
	done
	echo
	echo "targets (docs/BENCHMARKS.md, \"Targets\"), at 64 and 256 clients: parley/etcd ops/s >= 1.5 and"
	echo "p99 <= 1 (issue 9, W1), >= 2 and p99 <= 0.5 (the product's); at 1 client parley p50 <= 2.5 x the"
	echo "3-parallel fsync p50 (both, W3) and < 0.5 x etcd's p50 (the product's)."
	echo "par/3fs: parley p50 over the fsync p50 of 3 files syncing in parallel (3 nodes share the disk)."
} | tee "$OUT/summary.txt"
log "reports in $OUT"
