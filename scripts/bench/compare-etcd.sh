#!/usr/bin/env bash
# compare-etcd.sh: Parley against etcd 3.4 on this machine, in one run.
#
# Measures this disk's fsync time (1 writer and 3 in parallel), then runs the
# same replicated, durable KV put workload (HTTP/1.1 + JSON, same keys, same
# 256-byte values, same client code) against a 3-member etcd cluster and a
# 3-node Parley cluster, both on loopback, and prints a comparison table with
# the ratios of docs/PRODUCT.md's performance targets. Every JSON report goes
# to $OUT.
#
# Run from anywhere in the repository, as root on a fresh Debian machine
# (etcd-server and etcd-client are installed with apt-get when missing; Go is
# needed to build parley unless PARLEY_BIN names a built binary):
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
#   KEEP_DATA [0]        1: keep the temporary data directories
set -euo pipefail

DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-1s}
CLIENTS=${CLIENTS:-"1 64 256"}
VALUE_SIZE=${VALUE_SIZE:-256}
FSYNC_COUNT=${FSYNC_COUNT:-2000}
OUT=${OUT:-./bench-results/$(date -u +%Y%m%dT%H%M%SZ)}
WORKDIR=${WORKDIR:-/var/tmp}
KEEP_DATA=${KEEP_DATA:-0}

# Loopback ports, away from etcd's and Parley's defaults and below Linux's
# ephemeral range (32768-60999), where outgoing connections of other
# programs could take them between the check and the start.
ETCD_CLIENT_PORTS=(22379 22389 22399)
ETCD_PEER_PORTS=(22380 22390 22400)
PARLEY_HTTP_PORTS=(27070 27080 27090)
PARLEY_CLUSTER_PORTS=(27071 27081 27091)

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'compare-etcd: %s\n' "$*" >&2; exit 1; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
tmp=$(mktemp -d "$WORKDIR/parley-compare.XXXXXX")

# Processes started here, each the leader of its own process group.
pids=()

# stop_all stops every process group started here: SIGTERM, then SIGKILL
# after 15 s.
stop_all() {
	local pid i
	for pid in "${pids[@]}"; do
		kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		for ((i = 0; i < 150; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	pids=()
}

cleanup() {
	local rc=$?
	stop_all
	if [[ $KEEP_DATA == 1 ]]; then
		log "data kept in $tmp"
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME CMD...: runs CMD in its own session (so its whole process group
# can be stopped), logging to $OUT/logs/NAME.log.
start() {
	local name=$1
	shift
	setsid "$@" >"$OUT/logs/$name.log" 2>&1 &
	pids+=("$!")
}

# port_free PORT fails when something on loopback listens on PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# http_ok URL succeeds when URL answers 2xx.
http_ok() {
	if command -v curl >/dev/null; then
		curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null
	else
		python3 -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1" 2>/dev/null
	fi
}

# http_get URL prints the body of URL.
http_get() {
	if command -v curl >/dev/null; then
		curl -fsS --max-time 5 ${PARLEY_TOKEN:+-H "Authorization: Bearer $PARLEY_TOKEN"} "$1"
	else
		python3 -c 'import os,sys,urllib.request
req = urllib.request.Request(sys.argv[1])
if os.environ.get("PARLEY_TOKEN"): req.add_header("Authorization", "Bearer " + os.environ["PARLEY_TOKEN"])
sys.stdout.write(urllib.request.urlopen(req, timeout=5).read().decode())' "$1"
	fi
}

# figure FILE FIELD prints one figure of a bench JSON report: ops_per_s,
# errors, or p50/p99 (latency percentiles, ms).
figure() {
	local file=$1 field=$2
	if command -v jq >/dev/null; then
		case $field in
		p*) jq -r --argjson p "${field#p}" '.latency.percentiles[] | select(.p == $p) | .ms' "$file" ;;
		*) jq -r ".$field" "$file" ;;
		esac
	else
		python3 -c '
import json, sys
r = json.load(open(sys.argv[1])); f = sys.argv[2]
if f.startswith("p"):
    print(next(q["ms"] for q in r["latency"]["percentiles"] if q["p"] == float(f[1:])))
else:
    print(r[f])' "$file" "$field"
	fi
}

# settled prints "yes" when the cluster status JSON on stdin shows every
# partition with a leader and three replicas and no moves in progress.
settled() {
	if command -v jq >/dev/null; then
		jq -r 'if ([.partitions[] | select(.leader != "" and (.replicas | length) == 3)] | length) == (.partitions | length)
			and ((.moves // []) | length) == 0 then "yes" else "no" end'
	else
		python3 -c '
import json, sys
s = json.load(sys.stdin)
ok = all(p["leader"] and len(p["replicas"]) == 3 for p in s["partitions"]) and not s.get("moves")
print("yes" if ok else "no")'
	fi
}

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
# the run (warm-up included) and how many cores the servers used.
measure() {
	local name=$1 m0 m1 s0 s1 t0 t1
	shift
	m0=$(machine_cpu) s0=$(servers_cpu) t0=$(date +%s.%N)
	"$@" >"$OUT/$name.txt"
	m1=$(machine_cpu) s1=$(servers_cpu) t1=$(date +%s.%N)
	awk -v m0="$m0" -v m1="$m1" -v s0="$s0" -v s1="$s1" -v t0="$t0" -v t1="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN {
		split(m0, a, " "); split(m1, b, " ")
		printf "busy_pct %.0f\nserver_cores %.2f\n", 100 * (b[1] - a[1]) / (b[2] - a[2]), (s1 - s0) / hz / (t1 - t0)
	}' >"$OUT/$name.cpu"
}

# cpu NAME FIELD prints a figure measure noted.
cpu() { awk -v f="$2" '$1 == f { print $2 }' "$OUT/$1.cpu"; }

# --- tools ---------------------------------------------------------------

if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
	[[ $(id -u) == 0 ]] || die "etcd or etcdctl missing: run as root, or apt-get install etcd-server etcd-client"
	log "installing etcd-server and etcd-client"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server etcd-client >"$OUT/logs/apt.log"
	# The package may start a system etcd on :2379; it would share the CPUs.
	if command -v systemctl >/dev/null && systemctl is-active --quiet etcd 2>/dev/null; then
		log "stopping the packaged etcd service during the run (systemctl stop etcd)"
		systemctl stop etcd || true
	fi
fi
command -v python3 >/dev/null || command -v jq >/dev/null || die "need jq or python3 to read the JSON reports"
etcd_version=$(etcd --version | sed -n 's/^etcd Version: //p')
[[ $etcd_version == 3.4.* ]] || log "warning: etcd $etcd_version, not 3.4: the gateway path /v3 still works from 3.4 on"

if [[ -n ${PARLEY_BIN:-} ]]; then
	parley=$PARLEY_BIN
else
	command -v go >/dev/null || die "go missing: install Go (the version in go.mod) or set PARLEY_BIN"
	log "building parley"
	(cd "$repo" && go build -o "$tmp/bin/parley" ./cmd/parley)
	parley=$tmp/bin/parley
fi

# ports_free PORT... dies when one of the ports is taken.
ports_free() {
	local p
	for p in "$@"; do
		port_free "$p" || die "port $p on 127.0.0.1 is taken"
	done
}
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
	measure "etcd-c$c" "$parley" bench etcd-kv --endpoints "$etcd_endpoints" --clients "$c" --duration "$DURATION" \
		--warmup "$WARMUP" --value-size "$VALUE_SIZE" --json "$OUT/etcd-c$c.json" --svg "$OUT/etcd-c$c.svg" -q
done
log "stopping etcd"
stop_all

# --- Parley --------------------------------------------------------------

parley_urls=""
for i in 0 1 2; do
	parley_urls+="${parley_urls:+,}http://127.0.0.1:${PARLEY_HTTP_PORTS[i]}"
done
serve() { # serve I [--join ADDR]
	local i=$1
	shift
	start "parley-n$((i + 1))" "$parley" serve --id "n$((i + 1))" --data-dir "$tmp/parley/n$((i + 1))" \
		--http "127.0.0.1:${PARLEY_HTTP_PORTS[i]}" --cluster "127.0.0.1:${PARLEY_CLUSTER_PORTS[i]}" \
		--log-level warn "$@"
}
wait_ready() { # wait_ready I
	local url=http://127.0.0.1:${PARLEY_HTTP_PORTS[$1]}/readyz n
	for ((n = 0; ; n++)); do
		http_ok "$url" && return 0
		((n < 120)) || die "parley node $(($1 + 1)) not ready in 60 s; see $OUT/logs/parley-n$(($1 + 1)).log"
		sleep 0.5
	done
}
log "starting parley: 3 nodes on $parley_urls"
ports_free "${PARLEY_HTTP_PORTS[@]}" "${PARLEY_CLUSTER_PORTS[@]}"
serve 0
wait_ready 0
# Every call but health and sign-in needs a session: register the benchmark
# user (the first, so an admin) and keep its login for the bench commands.
export PARLEY_CONFIG_DIR="$tmp/parley-config"
bench_password="parley-bench-$RANDOM-$RANDOM"
url0="http://127.0.0.1:${PARLEY_HTTP_PORTS[0]}"
printf '%s\n' "$bench_password" | "$parley" user register bench --password-stdin --server "$url0" >/dev/null
printf '%s\n' "$bench_password" | "$parley" user login bench --password-stdin --server "$url0" >/dev/null
PARLEY_TOKEN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]]["token"])' \
	"$PARLEY_CONFIG_DIR/logins.json" "$url0")
export PARLEY_TOKEN
serve 1 --join "127.0.0.1:${PARLEY_CLUSTER_PORTS[0]}"
serve 2 --join "127.0.0.1:${PARLEY_CLUSTER_PORTS[0]}"
wait_ready 1
wait_ready 2
for ((n = 0; ; n++)); do
	status=$(http_get "http://127.0.0.1:${PARLEY_HTTP_PORTS[0]}/api/v1/cluster" || true)
	[[ -n $status && $(settled <<<"$status") == yes ]] && break
	((n < 120)) || die "parley partitions did not reach 3 replicas with leaders in 60 s"
	sleep 0.5
done
sleep 3 # leaders settle
http_get "http://127.0.0.1:${PARLEY_HTTP_PORTS[0]}/api/v1/cluster" >"$OUT/logs/parley-cluster.json" || true
"$parley" cluster status --server "http://127.0.0.1:${PARLEY_HTTP_PORTS[0]}" >"$OUT/logs/parley-status.txt" 2>&1 || true

for c in $CLIENTS; do
	log "parley: $c clients for $DURATION"
	measure "parley-c$c" "$parley" bench kv --servers "$parley_urls" --clients "$c" --duration "$DURATION" \
		--warmup "$WARMUP" --value-size "$VALUE_SIZE" --json "$OUT/parley-c$c.json" --svg "$OUT/parley-c$c.svg" -q
done
log "stopping parley"
stop_all

log "fsync again, after the runs: 1 writer, then 3 in parallel"
fsync fsync-1-after 1
fsync fsync-3-after 3
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt" >&2

# --- summary -------------------------------------------------------------

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
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
		ee=$(figure "$e" errors) pe=$(figure "$p" errors)
		if [[ $ee != 0 || $pe != 0 ]]; then
			printf '%-8s   errors: etcd %s, parley %s (see the .txt reports)\n' "" "$ee" "$pe"
		fi
	done
	echo
	printf '%-8s | %-33s | %-33s\n' "" "etcd CPU" "parley CPU"
	printf '%-8s | %7s %12s %12s | %7s %12s %12s\n' clients "busy %" "server cores" "server us/op" "busy %" "server cores" "server us/op"
	for c in $CLIENTS; do
		printf '%-8s | %7s %12s %12s | %7s %12s %12s\n' "$c" \
			"$(cpu "etcd-c$c" busy_pct)" "$(cpu "etcd-c$c" server_cores)" \
			"$(ratio "$(cpu "etcd-c$c" server_cores)e6" "$(figure "$OUT/etcd-c$c.json" ops_per_s)" | cut -d. -f1)" \
			"$(cpu "parley-c$c" busy_pct)" "$(cpu "parley-c$c" server_cores)" \
			"$(ratio "$(cpu "parley-c$c" server_cores)e6" "$(figure "$OUT/parley-c$c.json" ops_per_s)" | cut -d. -f1)"
	done
	echo "busy %: the whole machine over the run, warm-up included (the load generator runs here too);"
	echo "server cores: CPU time of the 3 server processes per second of run; server us/op: that over ops/s."
	echo
	echo "targets (docs/PRODUCT.md): parley/etcd ops/s >= 2 and p99 <= 0.5 at 64 and 256 clients;"
	echo "at 1 client parley p50 <= 2.5 x fsync p50 and < 0.5 x etcd's p50."
	echo "par/3fs: parley p50 over the fsync p50 of 3 files syncing in parallel (3 nodes share the disk)."
} | tee "$OUT/summary.txt"
log "reports in $OUT"
