#!/usr/bin/env bash
# compare-queue.sh: Parley's durable queues against RabbitMQ quorum queues on
# this machine, in one run.
#
# Starts a 3-node RabbitMQ cluster (Debian's rabbitmq-server, three nodes
# r1..r3@localhost with their own ports, data, cookie and epmd, joined with
# rabbitmqctl join_cluster) and a 3-node Parley cluster, both on loopback,
# and for each shape (queues x consumers) runs the same workload against
# each, one after the other: `parley-bench rabbitmq-queue` (quorum queue, publisher confirms,
# manual acks, prefetch 1) and `parley bench queue` (send, leased receive,
# ack; over live streams or HTTP calls, see ACK_MODES). One operation is one message through; producers are paced by the
# acks on both sides. Prints throughput, p50/p99 and the ratio Parley /
# RabbitMQ (issue 9, acceptance W5: at least 1.2), beside this disk's fsync
# p50 from the same run, then each side's server CPU per message (every
# process of the three servers, RabbitMQ's Erlang VMs as Parley's nodes),
# which depends less than throughput on what else the machine runs. When
# the RabbitMQ cluster cannot be formed it falls
# back to one node and says so in the table (a weaker comparison).
#
#   DURATION=8s scripts/bench/compare-queue.sh      # as root on Debian 12
#
# The default shapes are those of issue 9's W5 ("1 and 64 queues", docs/BENCHMARKS.md "Targets"): one
# queue with one consumer, one queue with 64 consumers, and 64 queues with
# one consumer each (64 consumers); producers = consumers in every shape.
#
# ACK_MODES picks how Parley's consumers take and acknowledge: "receive"
# (the next receive carries the ack, POST …/receive {ack}: one call per
# message), "call" (a separate POST …/ack), "stream" (producers and
# consumers on live streams, as RabbitMQ's publishers and consumers here
# use their connections: each send waits for its sent frame as a publisher
# waits for its confirm, the server pushes each message to a consumer with
# prefetch 1, which acknowledges it with a frame), or several, measured one
# after the other in each shape.
#
# Environment (defaults in brackets): DURATION [10s], WARMUP [1s],
# ACK_MODES ["stream receive"],
# SHAPES ["1x1 1x64 64x64"] (QUEUESxCONSUMERS; CLIENTS="1 64" with QUEUES=Q
# is the older spelling, Q x each client count), SIZE [200] (message bytes), RABBIT_NODES [3]
# (1: a one-node RabbitMQ), OUT [./bench-results/<UTC time>],
# WORKDIR [/var/tmp], PARLEY_BIN, PARLEY_BENCH_BIN, KEEP_DATA [0],
# ROUTE [1] (1: Parley's clients send each call to the node leading its
# queue's partition, parley bench queue --route, the Go client's Pool; 0:
# round-robin over the nodes, as RabbitMQ's clients connect, each node
# forwarding to the leader).
set -euo pipefail
NAME=compare-queue
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-1s}
if [[ -n ${CLIENTS:-} ]]; then
	SHAPES=""
	for c in $CLIENTS; do SHAPES+="${SHAPES:+ }${QUEUES:-1}x$c"; done
fi
SHAPES=${SHAPES:-"1x1 1x64 64x64"}
for s in $SHAPES; do
	[[ $s =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] || { echo "SHAPES: $s is not QUEUESxCONSUMERS" >&2; exit 2; }
	((${s%x*} <= ${s#*x})) || { echo "SHAPES: $s has fewer consumers than queues" >&2; exit 2; }
done
SIZE=${SIZE:-200}
ACK_MODES=${ACK_MODES:-stream receive}
for m in $ACK_MODES; do
	[[ $m == receive || $m == call || $m == stream ]] || { echo "ACK_MODES: $m is none of receive, call and stream" >&2; exit 2; }
done
RABBIT_NODES=${RABBIT_NODES:-3}
EPMD_PORT=24369
AMQP_PORTS=(25672 25673 25674)
DIST_PORTS=(25772 25773 25774)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

apt_install rabbitmq-server rabbitmq-server
apt_install jq jq
stop_service rabbitmq-server
build_parley
build_parley_bench
rmq_bin=/usr/lib/rabbitmq/bin
[[ -x $rmq_bin/rabbitmq-server ]] || rmq_bin=$(dirname "$(readlink -f "$(command -v rabbitmq-server)")")
command -v epmd >/dev/null || die "epmd missing (it comes with erlang-base)"
ports_free "$EPMD_PORT" "${AMQP_PORTS[@]}" "${DIST_PORTS[@]}"
rabbit_version=$(dpkg-query -W -f '${Version}' rabbitmq-server 2>/dev/null || echo unknown)
{
	machine_info
	echo "rabbitmq-server: $rabbit_version"
	echo "duration: $DURATION, warmup: $WARMUP, shapes (queues x consumers): $SHAPES, size: $SIZE bytes"
	route_info
} | tee "$OUT/machine.txt" >&2

log "fsync baseline in $tmp"
"$parley" bench fsync --dir "$tmp" --count 2000 --size 256 --json "$OUT/fsync.json" -q >"$OUT/fsync.txt"

# --- RabbitMQ ---------------------------------------------------------------

# Every RabbitMQ process here runs as root with HOME (the Erlang cookie) and
# the epmd port of this run, so it touches no system RabbitMQ.
rmq_home=$tmp/rabbitmq
mkdir -p "$rmq_home"
printf 'PARLEYCOMPAREQUEUE%s' "$RANDOM$RANDOM" >"$rmq_home/.erlang.cookie"
chmod 400 "$rmq_home/.erlang.cookie"
echo '[].' >"$rmq_home/enabled_plugins"
: >"$rmq_home/rabbitmq-env.conf"
rmq_env=(env HOME="$rmq_home" ERL_EPMD_PORT="$EPMD_PORT")
rmqctl() { "${rmq_env[@]}" "$rmq_bin/rabbitmqctl" "$@"; }

start epmd "${rmq_env[@]}" epmd -port "$EPMD_PORT"
wait_port "$EPMD_PORT" epmd

# rabbit_node I: starts node rI@localhost.
rabbit_node() {
	local i=$1 d=$rmq_home/r$1
	mkdir -p "$d"
	: >"$d/rabbitmq.conf"
	start "rabbitmq-r$i" "${rmq_env[@]}" RABBITMQ_NODENAME="r$i@localhost" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
		RABBITMQ_NODE_PORT="${AMQP_PORTS[i - 1]}" RABBITMQ_DIST_PORT="${DIST_PORTS[i - 1]}" \
		RABBITMQ_MNESIA_BASE="$d/mnesia" RABBITMQ_LOG_BASE="$d/log" RABBITMQ_LOGS=- \
		RABBITMQ_CONFIG_FILE="$d/rabbitmq.conf" RABBITMQ_CONF_ENV_FILE="$rmq_home/rabbitmq-env.conf" \
		RABBITMQ_ENABLED_PLUGINS_FILE="$rmq_home/enabled_plugins" RABBITMQ_PID_FILE="$d/pid" \
		"$rmq_bin/rabbitmq-server"
}

# join_cluster: makes r2 and r3 join r1; fails when a step does.
join_cluster() {
	local i
	for i in 2 3; do
		rmqctl -n "r$i@localhost" stop_app &&
			rmqctl -n "r$i@localhost" join_cluster r1@localhost &&
			rmqctl -n "r$i@localhost" start_app || return 1
	done
	[[ $(rmqctl -n r1@localhost cluster_status --formatter json | jq '.running_nodes | length') == 3 ]]
}

log "starting rabbitmq: $RABBIT_NODES node(s) on ports ${AMQP_PORTS[*]:0:RABBIT_NODES}"
rabbit_pids=() # the process groups of the RabbitMQ nodes
for ((i = 1; i <= RABBIT_NODES; i++)); do
	rabbit_node "$i"
	rabbit_pids+=("${pids[-1]}")
done
# await_startup fails at once while the node has not registered with epmd.
for ((i = 1; i <= RABBIT_NODES; i++)); do
	for ((n = 0; ; n++)); do
		rmqctl -n "r$i@localhost" await_startup --timeout 60 >>"$OUT/logs/rabbitmqctl.log" 2>&1 && break
		((n < 60)) || die "rabbitmq node r$i did not start in 2 minutes; see $OUT/logs/rabbitmq-r$i.log"
		sleep 2
	done
done
rabbit_setup="$RABBIT_NODES-node cluster"
if ((RABBIT_NODES == 3)) && ! join_cluster >>"$OUT/logs/rabbitmqctl.log" 2>&1; then
	log "WARNING: the 3 RabbitMQ nodes did not form a cluster (see $OUT/logs/rabbitmqctl.log); comparing with ONE node"
	rmqctl -n r2@localhost stop >/dev/null 2>&1 || true
	rmqctl -n r3@localhost stop >/dev/null 2>&1 || true
	RABBIT_NODES=1
	rabbit_setup="1 node ONLY (cluster formation failed): a weaker peer"
elif ((RABBIT_NODES == 1)); then
	rabbit_setup="1 node ONLY (RABBIT_NODES=1): a weaker peer"
fi
rmqctl -n r1@localhost cluster_status >"$OUT/logs/rabbitmq-cluster.txt" 2>&1 || true
rabbit_urls=""
for ((i = 0; i < RABBIT_NODES; i++)); do
	rabbit_urls+="${rabbit_urls:+,}amqp://guest:guest@127.0.0.1:${AMQP_PORTS[i]}/"
done

# --- Parley, then the runs, alternating ---------------------------------------

# measure NAME GROUPS CMD...: runs the benchmark CMD with its text report in
# $OUT/NAME.txt and writes to $OUT/NAME.cpu how many cores the servers'
# process groups GROUPS (a space-separated list) used over the run, warm-up
# included: their CPU time over the run's wall time; and how many the load
# generator, CMD itself, used (client_cores).
measure() {
	local name=$1 groups=$2 c0 c1 k0 k1 t0 t1
	shift 2
	# shellcheck disable=SC2086 # GROUPS is a list
	c0=$(group_ticks $groups) k0=$(children_ticks) t0=$(date +%s.%N)
	"$@" >"$OUT/$name.txt"
	# shellcheck disable=SC2086
	k1=$(children_ticks) c1=$(group_ticks $groups) t1=$(date +%s.%N)
	awk -v c=$((c1 - c0)) -v k=$((k1 - k0)) -v t0="$t0" -v t1="$t1" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "server_cores %.3f\nclient_cores %.3f\n", c / hz / (t1 - t0), k / hz / (t1 - t0) }' >"$OUT/$name.cpu"
}

# cpu_per_msg NAME [FIELD] prints the CPU µs per message of run NAME that
# FIELD (server_cores, the default, or client_cores) used: those cores over
# its messages per second.
cpu_per_msg() {
	awk -v c="$(awk -v f="${2:-server_cores}" '$1 == f { print $2 }' "$OUT/$1.cpu")" -v r="$(jq '.ops_per_s' "$OUT/$1.json")" \
		'BEGIN { if (r > 0 && c != "") printf "%.0f", c * 1e6 / r; else print "-" }'
}

start_parley
log "both clusters up; each run alternates RabbitMQ, then Parley"
for s in $SHAPES; do
	q=${s%x*} c=${s#*x}
	log "rabbitmq: $q queue(s), $c consumers for $DURATION"
	measure "rabbitmq-$s" "${rabbit_pids[*]}" "$parley_bench" rabbitmq-queue --urls "$rabbit_urls" --clients "$c" \
		--queues "$q" --size "$SIZE" --duration "$DURATION" --warmup "$WARMUP" --json "$OUT/rabbitmq-$s.json" \
		--svg "$OUT/rabbitmq-$s.svg" -q
	for m in $ACK_MODES; do
		log "parley: $q queue(s), $c consumers for $DURATION, ack by $m"
		ack=()
		[[ $m == receive ]] && ack=(--ack-on-receive)
		[[ $m == stream ]] && ack=(--stream)
		measure "parley-$m-$s" "${parley_pids[*]}" "$parley" bench queue --servers "$parley_urls" "$(route_flag)" --clients "$c" \
			--queues "$q" --size "$SIZE" "${ack[@]}" --duration "$DURATION" --warmup "$WARMUP" \
			--json "$OUT/parley-$m-$s.json" --svg "$OUT/parley-$m-$s.svg" -q
	done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt" >&2
log "stopping rabbitmq and parley"
stop_all

# --- summary -------------------------------------------------------------------

{
	f50=$(figure "$OUT/fsync.json" p50)
	printf 'fsync of 256 bytes on %s: p50 %.3f ms, p99 %.3f ms (same run)\n' "$WORKDIR" "$f50" "$(figure "$OUT/fsync.json" p99)"
	printf 'RabbitMQ %s: %s, quorum queue(s), publisher confirms, manual acks, prefetch 1\n' "$rabbit_version" "$rabbit_setup"
	printf 'Parley: 3 nodes; %s-byte messages, producers = consumers, one op = one message through\n\n' "$SIZE"
	printf '%-8s | %-7s | %-28s | %-28s | %-16s | %s\n' "" "" "rabbitmq quorum queue" "parley queue" "parley/rabbitmq" "p50 / fsync p50"
	printf '%-8s | %-7s | %8s %9s %9s | %8s %9s %9s | %7s %8s | %8s %8s\n' \
		"queues x" "ack by" "msgs/s" "p50 ms" "p99 ms" "msgs/s" "p50 ms" "p99 ms" "msgs/s" "p99" "rabbit" "parley"
	for s in $SHAPES; do
		for m in $ACK_MODES; do
			r=$OUT/rabbitmq-$s.json p=$OUT/parley-$m-$s.json
			printf '%-8s | %-7s | %s\n' "$s" "$m" "$(peer_cells "$r" "$p" "$f50")"
			peer_errors rabbitmq "$r" "$p"
		done
	done
	echo
	echo "servers' CPU per message (us: the cores every server process used over the run, warm-up included,"
	echo "over the messages per second)"
	echo "and the load generator's (its client: AMQP for RabbitMQ; for Parley its Go client, over HTTP or live streams)"
	printf '%-8s | %-7s | %8s %8s | %-15s | %8s %8s | %s\n' "queues x" "ack by" rabbit parley "parley / rabbit" \
		"client r" "client p" "parley / rabbit"
	for s in $SHAPES; do
		for m in $ACK_MODES; do
			rc=$(cpu_per_msg "rabbitmq-$s") pc=$(cpu_per_msg "parley-$m-$s")
			rk=$(cpu_per_msg "rabbitmq-$s" client_cores) pk=$(cpu_per_msg "parley-$m-$s" client_cores)
			printf '%-8s | %-7s | %8s %8s | %-15s | %8s %8s | %s\n' "$s" "$m" "$rc" "$pc" "$(ratio "$pc" "$rc")" \
				"$rk" "$pk" "$(ratio "$pk" "$rk")"
		done
	done
	echo
	echo "targets (docs/BENCHMARKS.md, \"Targets\"): queue produce+consume with ack, 1 and 64 queues, at least"
	echo "1.2 x RabbitMQ quorum queues (issue 9, W5); 1.5 x (the product's)"
	echo "(parley/rabbitmq msgs/s >= 1.2). Both clusters share this machine's cores and disk with the load generator."
} | tee "$OUT/summary.txt"
log "reports in $OUT"
