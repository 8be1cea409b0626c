#!/usr/bin/env bash
# compare-redirects.sh: Parley's short-link redirects against HAProxy
# serving the same codes from a static map, on this machine, in one run.
#
# Writes a map of $LINKS codes, creates them as links on a 3-node Parley
# cluster, and starts HAProxy answering GET /s/CODE with a 302 to the same
# URL from the map. Then, ROUNDS times, for each client count and each tool,
# the same load against both, back to back: `parley bench links --mode
# redirect --map MAP --existing` (each request a code picked by a hash of
# its number) and Apache Bench (`ab -k`, one code). Both tools send every
# request to one Parley node, as to the one HAProxy process: on a machine
# of few cores, three Go processes sharing the load cost more CPU per
# request than one (more wake-ups, three schedulers), which is not what is
# compared; SPREAD=1 sends parley bench's requests to the three nodes
# instead, as a load balancer in front of the cluster would. The server
# not being measured is paused (SIGSTOP), so that each has the machine to
# itself, as the other had; which of the two goes first alternates from
# round to round, so that a change of the machine's load during the run
# weighs on both.
# Prints, per tool and client count, the median over the rounds of each
# server's throughput and p50/p99, and the median of the rounds' ratios
# Parley / HAProxy (the target, docs/BENCHMARKS.md "Targets": at least 0.8 for issue 9,
# 0.7 for the product);
# then each server's CPU time per request, which depends less than
# throughput on what else the machine runs.
#
# Both servers have the machine's every core: HAProxy runs one process with
# a thread per core (its default), each Parley node GOMAXPROCS = cores; ab
# and parley bench keep their connections alive to both.
#
#   DURATION=8s ROUNDS=3 scripts/bench/compare-redirects.sh   # as root on Debian 12
#
# Parley answers on its nodes' links listeners (--links, a fasthttp server
# of short links alone), which is how a deployment serves short links at
# volume; LISTENER=api asks the nodes' HTTP API listeners (net/http)
# instead, as a deployment without --links does.
#
# Environment (defaults in brackets): DURATION [10s], WARMUP [1s],
# CLIENTS ["1 64"], ROUNDS [3], SPREAD [0], LISTENER [links], LINKS [1000], OUT
# [./bench-results/<UTC time>], WORKDIR [/var/tmp], PARLEY_BIN, KEEP_DATA
# [0].
set -euo pipefail
NAME=compare-redirects
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-1s}
CLIENTS=${CLIENTS:-"1 64"}
ROUNDS=${ROUNDS:-3}
SPREAD=${SPREAD:-0}
LISTENER=${LISTENER:-links}
LINKS=${LINKS:-1000}
HAPROXY_PORT=28080
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

apt_install haproxy haproxy
apt_install ab apache2-utils
apt_install jq jq
stop_service haproxy
build_parley
ports_free "$HAPROXY_PORT"
{
	machine_info
	echo "haproxy: $(haproxy -v | head -1)"
	echo "duration: $DURATION, warmup: $WARMUP, clients: $CLIENTS, rounds: $ROUNDS, spread: $SPREAD, links: $LINKS, listener: $LISTENER"
} | tee "$OUT/machine.txt" >&2

map=$OUT/codes.map
codes_map "$map" "$LINKS"
code0=r0
secs=${DURATION%s}

# ab_run NAME URL C: Apache Bench with keep-alive for $DURATION.
ab_run() {
	ab -k -q -r -c "$3" -t "$secs" -n 100000000 "$2" >"$OUT/$1.txt" 2>&1 || true
}
ab_figure() { # ab_figure NAME rps|p50|p99|failed
	case $2 in
	rps) awk '/^Requests per second/ { print $4 }' "$OUT/$1.txt" ;;
	failed) awk '/^Failed requests/ { print $3 }' "$OUT/$1.txt" ;;
	p*) awk -v p="${2#p}%" '$1 == p { print $2 }' "$OUT/$1.txt" ;;
	esac
}

# --- the two servers ----------------------------------------------------------

start_parley
parley_pids=("${pids[@]}")
# The URLs redirects are asked of: the nodes' links listeners (--links), or
# with LISTENER=api their HTTP API listeners.
parley_link_urls=$parley_urls
if [[ $LISTENER == links ]]; then
	parley_link_urls=""
	for p in "${PARLEY_LINKS_PORTS[@]}"; do parley_link_urls+="${parley_link_urls:+,}http://127.0.0.1:$p"; done
fi
parley_url=${parley_link_urls%%,*}
log "parley: creating $LINKS links from the map"
"$parley" bench links --servers "$parley_urls" --map "$map" --clients 16 --requests 1 -q >"$OUT/parley-create.txt"

haproxy_redirects "$tmp/haproxy.cfg" $HAPROXY_PORT "$map"
log "starting haproxy on 127.0.0.1:$HAPROXY_PORT"
start haproxy haproxy -db -f "$tmp/haproxy.cfg"
haproxy_pid=${pids[-1]}
wait_port "$HAPROXY_PORT" haproxy
haproxy_url=http://127.0.0.1:$HAPROXY_PORT
for ((n = 0; ; n++)); do # the port may be open before HAProxy answers
	[[ $(curl -sS -o /dev/null -w '%{http_code}' "$haproxy_url/s/$code0" 2>/dev/null) == 302 ]] && break
	((n < 40)) || die "haproxy does not redirect /s/$code0; see $OUT/logs/haproxy.log"
	sleep 0.25
done
{
	echo "redirect answered by haproxy:"
	curl -sS -D - -o /dev/null "$haproxy_url/s/$code0"
	echo "redirect answered by parley:"
	curl -sS -D - -o /dev/null "$parley_url/s/$code0"
} >>"$OUT/machine.txt" || true

# measure SERVER TOOL C ROUND: one measurement, the other server paused.
measure() {
	local server=$1 tool=$2 c=$3 r=$4 name=$1-$2-c$3-r$4
	if [[ $server == parley ]]; then
		pause_group "$haproxy_pid"
		local servers=$parley_link_urls url=$parley_url/s/$code0
		[[ $SPREAD == 1 ]] || servers=$parley_url
	else
		pause_group "${parley_pids[@]}"
		local servers=$haproxy_url url=$haproxy_url/s/$code0
	fi
	log "round $r: $server, $tool, $c clients for $DURATION"
	local m0 m1 s0 s1 t0 t1 reqs
	m0=$(busy_ticks) s0=$(server_ticks "$server") t0=$(date +%s.%N)
	if [[ $tool == bench ]]; then
		"$parley" bench links --servers "$servers" --map "$map" --existing --clients "$c" --duration "$DURATION" \
			--warmup "$WARMUP" --json "$OUT/$name.json" --svg "$OUT/$name.svg" -q >"$OUT/$name.txt"
	else
		ab_run "$name" "$url" "$c"
	fi
	m1=$(busy_ticks) s1=$(server_ticks "$server") t1=$(date +%s.%N)
	resume_group "$haproxy_pid" "${parley_pids[@]}"
	# Requests over the whole run, warm-up included (at the measured rate).
	if [[ $tool == bench ]]; then
		reqs=$(awk -v r="$(figure "$OUT/$name.json" ops_per_s)" -v d="${DURATION%s}" -v w="${WARMUP%s}" 'BEGIN { print r * (d + w) }')
	else
		reqs=$(awk '/^Complete requests/ { print $3 }' "$OUT/$name.txt")
	fi
	awk -v m0="$m0" -v m1="$m1" -v s0="$s0" -v s1="$s1" -v t0="$t0" -v t1="$t1" -v n="${reqs:-0}" -v hz="$(getconf CLK_TCK)" 'BEGIN {
		split(m0, a, " "); split(m1, b, " ")
		us = n > 0 ? 1e6 * (s1 - s0) / hz / n : 0
		printf "busy_pct %.0f\nserver_cores %.2f\nserver_us %.1f\n", 100 * (b[1] - a[1]) / (b[2] - a[2]), (s1 - s0) / hz / (t1 - t0), us
	}' >"$OUT/$name.cpu"
}

# server_ticks SERVER: the CPU time the server (parley: its three nodes)
# has used so far, in clock ticks.
server_ticks() {
	if [[ $1 == parley ]]; then procs_ticks "${parley_pids[@]}"; else procs_ticks "$haproxy_pid"; fi
}

for ((r = 1; r <= ROUNDS; r++)); do
	order=(parley haproxy)
	((r % 2)) || order=(haproxy parley)
	for c in $CLIENTS; do
		for tool in bench ab; do
			for server in "${order[@]}"; do
				measure "$server" "$tool" "$c" "$r"
			done
		done
	done
done
log "stopping parley and haproxy"
stop_all
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt" >&2

# --- summary ---------------------------------------------------------------

# figures SERVER TOOL C FIELD: the field of every round, one per line
# (FIELD: rps, p50, p99, errors; busy_pct, the machine's busy CPU; and
# server_us, the server's CPU time per request in microseconds).
figures() {
	local r f
	for ((r = 1; r <= ROUNDS; r++)); do
		f=$1-$2-c$3-r$r
		if [[ $4 == busy_pct || $4 == server_us ]]; then
			awk -v k="$4" '$1 == k { print $2 }' "$OUT/$f.cpu"
		elif [[ $2 == bench ]]; then
			case $4 in
			rps) figure "$OUT/$f.json" ops_per_s ;;
			*) figure "$OUT/$f.json" "$4" ;;
			esac
		else
			case $4 in
			errors) ab_figure "$f" failed ;;
			*) ab_figure "$f" "$4" ;;
			esac
		fi
	done
}

# ratios TOOL C: each round's Parley / HAProxy throughput.
ratios() {
	paste <(figures parley "$1" "$2" rps) <(figures haproxy "$1" "$2" rps) | while read -r p h; do ratio "$p" "$h"; echo; done
}

# med SERVER TOOL C FIELD: the median over the rounds.
med() {
	# shellcheck disable=SC2046 # one number per word
	median $(figures "$@")
}

{
	printf 'medians of %s rounds of %s each, the two servers back to back in every round\n\n' "$ROUNDS" "$DURATION"
	printf '%-22s | %-28s | %-28s | %s\n' "" "haproxy" "parley" "parley / haproxy"
	printf '%-22s | %10s %8s %8s | %10s %8s %8s | %8s  %s\n' "tool, clients" "req/s" "p50 ms" "p99 ms" "req/s" "p50 ms" "p99 ms" "req/s" "(each round)"
	for c in $CLIENTS; do
		for tool in bench ab; do
			label="parley bench, $c"
			[[ $tool == ab ]] && label="ab -k (1 code), $c"
			# shellcheck disable=SC2046 # one number per word
			printf '%-22s | %10.0f %8.2f %8.2f | %10.0f %8.2f %8.2f | %8.2f  %s\n' "$label" \
				"$(med haproxy $tool "$c" rps)" "$(med haproxy $tool "$c" p50)" "$(med haproxy $tool "$c" p99)" \
				"$(med parley $tool "$c" rps)" "$(med parley $tool "$c" p50)" "$(med parley $tool "$c" p99)" \
				"$(median $(ratios $tool "$c"))" "$(ratios $tool "$c" | paste -sd' ')"
			he=$(figures haproxy $tool "$c" errors | awk '{ s += $1 } END { print s + 0 }')
			pe=$(figures parley $tool "$c" errors | awk '{ s += $1 } END { print s + 0 }')
			if [[ $he != 0 || $pe != 0 ]]; then
				printf '%-22s   errors in all rounds: haproxy %s, parley %s\n' "" "$he" "$pe"
			fi
		done
	done
	echo
	echo "server CPU per request (us, all of the server's processes and threads, parley's three nodes; medians)"
	echo "and the machine's busy CPU"
	printf '%-22s | %10s %8s | %10s %8s | %s\n' "tool, clients" "haproxy" "busy %" "parley" "busy %" "parley / haproxy"
	for c in $CLIENTS; do
		for tool in bench ab; do
			label="parley bench, $c"
			[[ $tool == ab ]] && label="ab -k (1 code), $c"
			hu=$(med haproxy $tool "$c" server_us) pu=$(med parley $tool "$c" server_us)
			printf '%-22s | %10.1f %8.0f | %10.1f %8.0f | %8s\n' "$label" "$hu" "$(med haproxy $tool "$c" busy_pct)" \
				"$pu" "$(med parley $tool "$c" busy_pct)" "$(ratio "$pu" "$hu")"
		done
	done
	echo
	echo "targets (docs/BENCHMARKS.md, \"Targets\"): parley / haproxy req/s >= 0.8 (issue 9, W7), >= 0.7 (the product's)."
	echo "ab's percentiles are whole ms;"
	if [[ $SPREAD == 1 ]]; then
		echo "ab sends every request to node 1 (one code), parley bench spreads them over the 3 nodes."
	else
		echo "ab (one code) and parley bench ($LINKS codes) send every request to node 1."
	fi
} | tee "$OUT/summary.txt"
log "reports in $OUT"
