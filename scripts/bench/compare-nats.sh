#!/usr/bin/env bash
# compare-nats.sh: Parley's replicated KV puts against NATS JetStream R3
# publishes on this machine, in one run.
#
# Starts a 3-server NATS JetStream cluster (Debian's nats-server, three
# configurations with their own client, route and monitoring ports and store
# directories) and a 3-node Parley cluster, both on loopback, and for each
# client count runs, one after the other: `parley-bench nats-publish` (a
# file-backed stream with 3 replicas; each publish waits for its ack, sent
# once a quorum stored the message) and `parley bench kv --mix put` (each put
# waits for its commit on a quorum, fsynced). Same value size and keyspace;
# NATS's clients spread round-robin over the three servers, Parley's send
# each put to its partition's leader (parley bench kv --route; ROUTE=0
# spreads them round-robin too, each node forwarding to the leader). Prints
# throughput, p50/p99 and the ratio Parley / NATS (the product's target, docs/BENCHMARKS.md "Targets": at
# least 0.5, although NATS does not fsync each message; Parley does), beside
# this disk's fsync p50 from the same run.
#
#   DURATION=8s scripts/bench/compare-nats.sh      # as root on Debian 12
#
# Environment (defaults in brackets): DURATION [10s], WARMUP [1s],
# CLIENTS ["64 256"], VALUE_SIZE [256], OUT [./bench-results/<UTC time>],
# WORKDIR [/var/tmp], PARLEY_BIN, PARLEY_BENCH_BIN, KEEP_DATA [0], ROUTE [1].
set -euo pipefail
NAME=compare-nats
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-1s}
CLIENTS=${CLIENTS:-"64 256"}
VALUE_SIZE=${VALUE_SIZE:-256}
NATS_PORTS=(24222 24223 24224)
NATS_ROUTE_PORTS=(24248 24249 24250)
NATS_HTTP_PORTS=(24322 24323 24324)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

apt_install nats-server nats-server
apt_install jq jq
stop_service nats-server
build_parley
build_parley_bench
ports_free "${NATS_PORTS[@]}" "${NATS_ROUTE_PORTS[@]}" "${NATS_HTTP_PORTS[@]}"
nats_version=$(nats-server --version | awk '{ print $NF }')
{
	machine_info
	echo "nats-server: $nats_version ($(dpkg-query -W -f '${Version}' nats-server 2>/dev/null || echo "not from a package"))"
	echo "duration: $DURATION, warmup: $WARMUP, clients: $CLIENTS, value size: $VALUE_SIZE"
	route_info
} | tee "$OUT/machine.txt" >&2

log "fsync baseline in $tmp"
"$parley" bench fsync --dir "$tmp" --count 2000 --size "$VALUE_SIZE" --json "$OUT/fsync.json" -q >"$OUT/fsync.txt"

# --- NATS --------------------------------------------------------------------

routes=""
nats_urls=""
for i in 0 1 2; do
	routes+="${routes:+, }nats-route://127.0.0.1:${NATS_ROUTE_PORTS[i]}"
	nats_urls+="${nats_urls:+,}nats://127.0.0.1:${NATS_PORTS[i]}"
done
log "starting nats: 3 servers on $nats_urls"
for i in 0 1 2; do
	d=$tmp/nats/n$((i + 1))
	mkdir -p "$d"
	cat >"$d.conf" <<EOF
server_name: n$((i + 1))
listen: 127.0.0.1:${NATS_PORTS[i]}
http: 127.0.0.1:${NATS_HTTP_PORTS[i]}
jetstream {
  store_dir: "$d"
}
cluster {
  name: parley-compare
  listen: 127.0.0.1:${NATS_ROUTE_PORTS[i]}
  routes: [$routes]
}
EOF
	start "nats-n$((i + 1))" nats-server -c "$d.conf"
done
# Ready when every server answers /healthz and the JetStream meta group has
# a leader (a stream with 3 replicas can be created).
for ((n = 0; ; n++)); do
	ok=0
	for i in 0 1 2; do
		http_ok "http://127.0.0.1:${NATS_HTTP_PORTS[i]}/healthz" && ok=$((ok + 1))
	done
	leader=$(curl -fsS --max-time 2 "http://127.0.0.1:${NATS_HTTP_PORTS[0]}/jsz" 2>/dev/null | jq -r '.meta_cluster.leader // ""' || true)
	((ok == 3)) && [[ -n $leader ]] && break
	((n < 120)) || die "nats cluster not ready in 60 s; see $OUT/logs/nats-n*.log"
	sleep 0.5
done
curl -fsS --max-time 2 "http://127.0.0.1:${NATS_HTTP_PORTS[0]}/jsz" >"$OUT/logs/nats-jsz.json" 2>/dev/null || true

# --- Parley, then the runs, alternating ----------------------------------------

start_parley
log "both clusters up; each run alternates NATS, then Parley"
for c in $CLIENTS; do
	log "nats: $c clients for $DURATION"
	"$parley_bench" nats-publish --urls "$nats_urls" --replicas 3 --clients "$c" --value-size "$VALUE_SIZE" \
		--duration "$DURATION" --warmup "$WARMUP" --json "$OUT/nats-c$c.json" --svg "$OUT/nats-c$c.svg" -q \
		>"$OUT/nats-c$c.txt"
	log "parley: $c clients for $DURATION"
	"$parley" bench kv --mix put --servers "$parley_urls" "$(route_flag)" --clients "$c" --value-size "$VALUE_SIZE" \
		--duration "$DURATION" --warmup "$WARMUP" --json "$OUT/parley-c$c.json" --svg "$OUT/parley-c$c.svg" -q \
		>"$OUT/parley-c$c.txt"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt" >&2
log "stopping nats and parley"
stop_all

# --- summary -------------------------------------------------------------------

{
	f50=$(figure "$OUT/fsync.json" p50)
	printf 'fsync of %d bytes on %s: p50 %.3f ms, p99 %.3f ms (same run)\n' "$VALUE_SIZE" "$WORKDIR" "$f50" "$(figure "$OUT/fsync.json" p99)"
	printf 'NATS %s: 3 servers, JetStream stream with 3 replicas, file storage (no fsync per message: sync_interval default)\n' "$nats_version"
	printf 'Parley: 3 nodes, kv --mix put (fsync per commit); %d-byte values, 10000 keys / subjects on both sides\n\n' "$VALUE_SIZE"
	printf '%-8s | %-28s | %-28s | %-16s | %s\n' "" "nats jetstream R3 publish" "parley kv put" "parley/nats" "p50 / fsync p50"
	printf '%-8s | %8s %9s %9s | %8s %9s %9s | %7s %8s | %8s %8s\n' \
		clients "ops/s" "p50 ms" "p99 ms" "ops/s" "p50 ms" "p99 ms" "ops/s" "p99" "nats" "parley"
	for c in $CLIENTS; do
		s=$OUT/nats-c$c.json p=$OUT/parley-c$c.json
		printf '%-8s | %s\n' "$c" "$(peer_cells "$s" "$p" "$f50")"
		peer_errors nats "$s" "$p"
	done
	echo
	echo "target (the product's, docs/BENCHMARKS.md \"Targets\"): replicated durable KV puts at least half of NATS JetStream R3's publish rate"
	echo "(parley/nats ops/s >= 0.5). Both clusters share this machine's cores and disk with the load generator."
} | tee "$OUT/summary.txt"
log "reports in $OUT"
