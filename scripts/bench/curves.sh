#!/usr/bin/env bash
# curves.sh: Parley's scaling curves (issue 9, point 7), each a plot and a
# table, on local clusters on loopback.
#
#   clients     kv puts: throughput and p99 against clients (3 nodes, RF 3)
#   nodes       the same at 64 clients against 3, 5 and 7 nodes (RF 3)
#   valuesize   the same against the value size (64 B to 64 KiB)
#   partitions  the same at 64 clients against the number of partitions
#   memory      each node's RSS and Go heap against the data held: distinct
#               KV keys, then (on a fresh cluster) queue messages never consumed
#   restart     kill -9 one node after N puts, restart it: time until
#               /readyz answers and until its replicas have caught up
#   catchup     stop one node, write N puts, start it: the same two times
#
# Every point of the kv sweeps runs `parley bench kv --mix put` for
# $DURATION; the memory sweep fills keys with `parley bench kv --mix get
# --requests 1` (its fill stores every key of the keyspace once) and
# messages with scripts/bench/queuefill. Each sweep writes, into $OUT,
# curve-NAME.svg and curve-NAME.md (made by scripts/bench/curveplot), its
# JSON reports and the load average before and after every point.
#
#   DURATION=8s SWEEPS="clients nodes" scripts/bench/curves.sh
#
# Environment (defaults in brackets):
#   SWEEPS ["clients nodes valuesize partitions memory restart catchup"]
#   DURATION [8s], WARMUP [1s]   measured time and warm-up of each kv point
#   ROUNDS [3]                   runs of each kv point; the curve shows the
#                                medians (clients and value size: the whole
#                                sweep once per round, so that configurations
#                                alternate; nodes and partitions: the runs
#                                one after another on each cluster)
#   CLIENTS ["1 4 16 64 256"]    the clients sweep
#   NODES ["3 5 7"]              the nodes sweep
#   VALUE_SIZES ["64 256 1024 4096 16384 65536"], VALUE_CLIENTS [16]
#   PARTITIONS ["3 16 48 96"]    the partitions sweep (--partitions, 1 to 4096)
#   SWEEP_CLIENTS [64]           clients of the nodes and partitions sweeps
#   VALUE_SIZE [256]             value size where it is not swept
#   MEM_KEYS ["100000 250000 500000 1000000"]      keys held at each step
#   MEM_MESSAGES ["100000 250000 500000 1000000"]  messages held at each step
#   RESTART_ENTRIES ["10000 100000 500000"]  puts written before each kill
#   CATCHUP_ENTRIES ["10000 100000 250000"]  puts written while a node is down
#   OUT, WORKDIR [/var/tmp], PARLEY_BIN, KEEP_DATA   as in lib.sh
set -euo pipefail
NAME=curves
SWEEPS=${SWEEPS:-"clients nodes valuesize partitions memory restart catchup"}
DURATION=${DURATION:-8s}
WARMUP=${WARMUP:-1s}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-"1 4 16 64 256"}
NODES=${NODES:-"3 5 7"}
VALUE_SIZES=${VALUE_SIZES:-"64 256 1024 4096 16384 65536"}
VALUE_CLIENTS=${VALUE_CLIENTS:-16}
PARTITIONS=${PARTITIONS:-"3 16 48 96"}
SWEEP_CLIENTS=${SWEEP_CLIENTS:-64}
VALUE_SIZE=${VALUE_SIZE:-256}
MEM_KEYS=${MEM_KEYS:-"100000 250000 500000 1000000"}
MEM_MESSAGES=${MEM_MESSAGES:-"100000 250000 500000 1000000"}
RESTART_ENTRIES=${RESTART_ENTRIES:-"10000 100000 500000"}
CATCHUP_ENTRIES=${CATCHUP_ENTRIES:-"10000 100000 250000"}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

apt_install jq jq
apt_install curl curl
build_parley
log "building curveplot and queuefill"
(cd "$repo" && go build -o "$tmp/bin/curveplot" ./scripts/bench/curveplot && go build -o "$tmp/bin/queuefill" ./scripts/bench/queuefill)
curveplot=$tmp/bin/curveplot
queuefill=$tmp/bin/queuefill
fstype=$(df -PT "$tmp" | awk 'NR == 2 { print $2 }')
[[ $fstype != tmpfs ]] || die "$WORKDIR is a tmpfs: set WORKDIR to a directory on the disk under test"
{
	machine_info
	echo "memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "sweeps: $SWEEPS; duration $DURATION, warmup $WARMUP"
} | tee "$OUT/machine.txt" >&2

load1() { cut -d' ' -f1 /proc/loadavg; }

# fresh_cluster NODES [SERVE FLAGS...]: stops what runs, forgets its data,
# and starts a new cluster of NODES nodes.
fresh_cluster() {
	local nodes=$1
	shift
	stop_all
	rm -rf "$tmp/parley" "$tmp/parley-config"
	PARLEY_SERVE_FLAGS="$*" start_parley "$nodes"
}

# kv_point NAME MANIFEST X CLIENTS VALUE_SIZE: one `parley bench kv` put run
# against the running cluster, noted in MANIFEST with the servers' CPU per
# put and the load average before and after.
kv_point() {
	local name=$1 manifest=$2 x=$3 clients=$4 size=$5 l0 l1 c0 c1 hz ops
	hz=$(getconf CLK_TCK)
	log "$name: $clients clients, $size-byte values, $DURATION (load $(load1))"
	l0=$(load1) c0=$(procs_ticks "${parley_pids[@]}")
	"$parley" bench kv --servers "$parley_urls" --mix put --clients "$clients" --value-size "$size" \
		--duration "$DURATION" --warmup "$WARMUP" --json "$OUT/$name.json" -q >"$OUT/$name.txt" ||
		{ log "$name failed: see $OUT/$name.txt"; return 0; }
	c1=$(procs_ticks "${parley_pids[@]}") l1=$(load1)
	ops=$(jq -r '.ops' "$OUT/$name.json")
	# Server CPU per put: the warm-up's puts are not counted in ops, so
	# this slightly overstates it (by up to WARMUP/DURATION).
	printf '%s\t%s\t%s\t%s → %s\n' "$x" "$name.json" \
		"$(awk -v t=$((c1 - c0)) -v hz="$hz" -v n="$ops" 'BEGIN { if (n > 0) printf "%.0f", t / hz * 1e6 / n; else print "-" }')" \
		"$l0" "$l1" >>"$manifest"
}

# new_manifest FILE XNAME: starts a manifest of kv points.
new_manifest() { printf '%s\treport\tserver CPU µs/put\tload 1m before → after\n' "$2" >"$1"; }

# plot NAME ARGS...: runs curveplot into curve-NAME.svg and curve-NAME.md.
plot() {
	local name=$1
	shift
	"$curveplot" "$@" --svg "$OUT/curve-$name.svg" --md "$OUT/curve-$name.md" || log "plot $name failed"
	[[ -s $OUT/curve-$name.md ]] && cat "$OUT/curve-$name.md" >&2
	return 0
}

sweep_clients() {
	local m=$OUT/clients.tsv c r
	fresh_cluster 3
	new_manifest "$m" clients
	for ((r = 1; r <= ROUNDS; r++)); do
		for c in $CLIENTS; do kv_point "kv-clients-$c-r$r" "$m" "$c" "$c" "$VALUE_SIZE"; done
	done
	plot kv-clients --reports "$m" --log-x --title "KV puts against clients (3 nodes, RF 3, $VALUE_SIZE B values)"
}

sweep_valuesize() {
	local m=$OUT/valuesize.tsv v r
	fresh_cluster 3
	new_manifest "$m" "value size"
	for ((r = 1; r <= ROUNDS; r++)); do
		for v in $VALUE_SIZES; do kv_point "kv-value-$v-r$r" "$m" "$v" "$VALUE_CLIENTS" "$v"; done
	done
	plot kv-value-size --reports "$m" --log-x --x-format bytes --bytes-per-op \
		--title "KV puts against value size (3 nodes, RF 3, $VALUE_CLIENTS clients)"
}

sweep_nodes() {
	local m=$OUT/nodes.tsv n r
	new_manifest "$m" nodes
	for n in $NODES; do
		# More nodes than replicas: the partitions' replicas move onto the
		# joining nodes before the cluster settles.
		PARLEY_SETTLE_S=600 fresh_cluster "$n"
		for ((r = 1; r <= ROUNDS; r++)); do
			kv_point "kv-nodes-$n-r$r" "$m" "$n" "$SWEEP_CLIENTS" "$VALUE_SIZE"
		done
	done
	plot kv-nodes --reports "$m" --x-format plain \
		--title "KV puts against nodes (RF 3, 16 partitions, $SWEEP_CLIENTS clients spread over all nodes)"
}

sweep_partitions() {
	local m=$OUT/partitions.tsv p r
	new_manifest "$m" partitions
	for p in $PARTITIONS; do
		fresh_cluster 3 --partitions "$p"
		for ((r = 1; r <= ROUNDS; r++)); do
			kv_point "kv-partitions-$p-r$r" "$m" "$p" "$SWEEP_CLIENTS" "$VALUE_SIZE"
		done
	done
	plot kv-partitions --reports "$m" --log-x --x-format plain \
		--title "KV puts against partitions (3 nodes, RF 3, $SWEEP_CLIENTS clients)"
}

# mem_row VALUES X: appends each node's RSS (/proc/PID/status VmRSS), Go
# heap in use (go_memstats_heap_inuse_bytes of /metrics) and data
# directory size, in MiB, and the load average, to VALUES at X.
mem_row() {
	local values=$1 x=$2 i rss heap disk
	local rows=("" "" "")
	for ((i = 1; i <= ${#parley_pids[@]}; i++)); do
		rss=$(awk '/^VmRSS:/ { printf "%.0f", $2 / 1024 }' "/proc/${parley_pids[i - 1]}/status")
		heap=$(curl -fsS --max-time 5 "http://127.0.0.1:${PARLEY_HTTP_PORTS[i - 1]}/metrics" |
			awk '$1 == "go_memstats_heap_inuse_bytes" { printf "%.0f", $2 / 1048576 }')
		disk=$(du -sm "$tmp/parley/n$i" | cut -f1)
		rows[0]+=$(printf '%s\tRSS (MiB)\tn%s\t%s' "$x" "$i" "$rss")$'\n'
		rows[1]+=$(printf '%s\tGo heap in use (MiB)\tn%s\t%s' "$x" "$i" "${heap:-nan}")$'\n'
		rows[2]+=$(printf '%s\tdata directory (MiB)\tn%s\t%s' "$x" "$i" "$disk")$'\n'
	done
	printf '%s' "${rows[@]}" >>"$values"
	printf '%s\t-\tload 1m\t%s\n' "$x" "$(load1)" >>"$values"
}

# fill_keys FROM TO STEP stores TO-FROM new distinct keys: --mix get
# fills every key of its keyspace once (under a prefix of its own), then
# makes one measured get.
fill_keys() {
	"$parley" bench kv --servers "$parley_urls" --mix get --keys $(($2 - $1)) --key-prefix "mem/s$3/" \
		--value-size "$VALUE_SIZE" --clients 64 --requests 1 -q
}

# fill_messages FROM TO STEP sends TO-FROM messages and consumes none.
fill_messages() {
	"$queuefill" --servers "$parley_urls" --queue memfill --queues 16 --messages $(($2 - $1)) --size 200 --clients 8
}

# memory_curve NAME UNIT FILL LIST TITLE: on a fresh cluster, fills with
# FILL to each count of LIST and records every node's memory after each
# step and 5 s of rest, then plots NAME.
memory_curve() {
	local name=$1 unit=$2 fill=$3 list=$4 title=$5
	local v=$OUT/$name.tsv held=0 n step=0 t0 t1
	fresh_cluster 3
	printf '%s\tpanel\tseries\ty\n' "$unit" >"$v"
	sleep 5
	mem_row "$v" 0
	for n in $list; do
		step=$((step + 1))
		log "memory: $unit $held to $n (load $(load1))"
		t0=$(date +%s.%N)
		"$fill" "$held" "$n" "$step" >"$OUT/$name-$n.txt" 2>&1 ||
			{ log "memory: filling to $n $unit failed: see $OUT/$name-$n.txt"; break; }
		t1=$(date +%s.%N)
		held=$n
		printf '%s\t-\tfill s\t%.0f\n' "$n" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" >>"$v"
		sleep 5
		mem_row "$v" "$n"
	done
	plot "$name" --values "$v" --title "$title"
}

sweep_memory() {
	memory_curve memory-keys keys fill_keys "$MEM_KEYS" \
		"Memory per node against distinct KV keys held ($VALUE_SIZE B values, 3 nodes, RF 3)"
	memory_curve memory-messages messages fill_messages "$MEM_MESSAGES" \
		"Memory per node against queue messages held (200 characters, 16 queues, 3 nodes, RF 3)"
}

# caught_up prints yes when every partition has a leader, none is
# under-replicated and every replica of node $1 lags by no entry.
caught_up() {
	curl -fsS --max-time 5 -H "Authorization: Bearer $PARLEY_TOKEN" "http://127.0.0.1:${PARLEY_HTTP_PORTS[0]}/api/v1/cluster" 2>/dev/null |
		jq -r --arg n "$1" '[.partitions[] | select(.leader == "" or .under_replicated or
			any(.replicas[]; .node == $n and .lag_entries != 0))] | if length == 0 then "yes" else "no" end' 2>/dev/null || echo no
}

# time_back VALUES X LOG: starts node 3 again (its log to LOG) and appends
# to VALUES the seconds until it answers /readyz and until it has caught up
# (polled every 0.1 s and 0.25 s; 300 s at most), and how many snapshots
# it received.
time_back() {
	local values=$1 x=$2 t0 t ready="" i
	t0=$(date +%s.%N)
	start_parley_node 3 "$3"
	for ((i = 0; i < 3000; i++)); do
		if [[ -z $ready ]] && http_ok "http://127.0.0.1:${PARLEY_HTTP_PORTS[2]}/readyz"; then
			ready=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
		fi
		if [[ -n $ready && $(caught_up n3) == yes ]]; then
			t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
			printf '%s\ttime (s)\tready (/readyz)\t%s\n%s\ttime (s)\tcaught up (lag 0)\t%s\n' "$x" "$ready" "$x" "$t" >>"$values"
			# Snapshots node 3 received since it started: a replica too far
			# behind for the leader's (compacted) log is sent one.
			printf '%s\t-\tsnapshots received\t%s\n' "$x" "$(curl -fsS --max-time 5 "http://127.0.0.1:${PARLEY_HTTP_PORTS[2]}/metrics" |
				awk '/^parley_transport_snapshots_total\{direction="received"\}/ { print $2 }')" >>"$values"
			log "node 3 ready after $ready s, caught up after $t s"
			return 0
		fi
		sleep 0.1
	done
	log "node 3 not caught up in 300 s"
	printf '%s\ttime (s)\tready (/readyz)\t%s\n' "$x" "${ready:-nan}" >>"$values"
}

# put_n N: N puts over a keyspace of 100k keys, 64 clients.
put_n() {
	"$parley" bench kv --servers "$1" --mix put --requests "$2" --keys 100000 --clients 64 \
		--value-size "$VALUE_SIZE" -q >"$OUT/$3.txt" 2>&1 || log "$3 failed: see $OUT/$3.txt"
}

# A node down longer than --dead-after would have its replicas rebuilt
# elsewhere; these sweeps measure a restart, so they raise it.
sweep_restart() {
	local v=$OUT/restart.tsv written=0 n pid
	fresh_cluster 3 --dead-after 30m
	printf 'puts written\tpanel\tseries\ty\n' >"$v"
	for n in $RESTART_ENTRIES; do
		log "restart: writing puts $written to $n (load $(load1))"
		put_n "$parley_urls" $((n - written)) "restart-fill-$n"
		written=$n
		printf '%s\t-\tn3 data directory (MiB)\t%s\n' "$n" "$(du -sm "$tmp/parley/n3" | cut -f1)" >>"$v"
		printf '%s\t-\tload 1m\t%s\n' "$n" "$(load1)" >>"$v"
		pid=${parley_pids[2]}
		log "restart: kill -9 node 3 after $n puts"
		kill -KILL -- "-$pid"
		wait "$pid" 2>/dev/null || true
		time_back "$v" "$n" "parley-n3-restart-$n"
	done
	plot restart --values "$v" --log-x --title "Restart after kill -9 against puts written (3 nodes, RF 3, 16 partitions)"
}

sweep_catchup() {
	local v=$OUT/catchup.tsv n pid two
	fresh_cluster 3 --dead-after 30m
	two="http://127.0.0.1:${PARLEY_HTTP_PORTS[0]},http://127.0.0.1:${PARLEY_HTTP_PORTS[1]}"
	printf 'puts while down\tpanel\tseries\ty\n' >"$v"
	for n in $CATCHUP_ENTRIES; do
		pid=${parley_pids[2]}
		log "catch-up: stopping node 3 (SIGTERM), then $n puts (load $(load1))"
		kill -TERM -- "-$pid"
		wait "$pid" 2>/dev/null || true
		put_n "$two" "$n" "catchup-fill-$n"
		printf '%s\t-\tload 1m\t%s\n' "$n" "$(load1)" >>"$v"
		time_back "$v" "$n" "parley-n3-catchup-$n"
	done
	plot catchup --values "$v" --log-x --title "Catch-up of a stopped node against puts written while it was down (3 nodes, RF 3)"
}

for s in $SWEEPS; do
	case $s in
	clients | nodes | valuesize | partitions | memory | restart | catchup)
		echo "$s: load average at start $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%SZ)" | tee -a "$OUT/machine.txt" >&2
		"sweep_$s"
		echo "$s: load average at end $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%SZ)" | tee -a "$OUT/machine.txt" >&2
		;;
	*) die "unknown sweep $s (want clients nodes valuesize partitions memory restart catchup)" ;;
	esac
done
stop_all
log "curves in $OUT"
