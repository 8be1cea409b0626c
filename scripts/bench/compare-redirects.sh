#!/usr/bin/env bash
# compare-redirects.sh: Parley's short-link redirects against HAProxy
# serving the same codes from a static map, on this machine, in one run.
#
# Writes a map of $LINKS codes, creates them as links on a 3-node Parley
# cluster, and starts HAProxy answering GET /s/CODE with a 302 to the same
# URL from the map. Then, for each client count, the same load against both:
# `parley bench links --mode redirect --map MAP --existing` (each request a
# code picked by a hash of its number; Parley's requests spread over the
# three nodes) and Apache Bench (`ab -k`, one code). Prints throughput,
# p50/p99 and the ratio Parley / HAProxy (PRODUCT.md's target: at least
# 0.7).
#
#   DURATION=8s scripts/bench/compare-redirects.sh      # as root on Debian 12
#
# Environment (defaults in brackets): DURATION [10s], WARMUP [1s],
# CLIENTS ["1 64"], LINKS [1000], OUT [./bench-results/<UTC time>],
# WORKDIR [/var/tmp], PARLEY_BIN, KEEP_DATA [0].
set -euo pipefail
NAME=compare-redirects
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-1s}
CLIENTS=${CLIENTS:-"1 64"}
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
	echo "duration: $DURATION, warmup: $WARMUP, clients: $CLIENTS, links: $LINKS"
} | tee "$OUT/machine.txt" >&2

map=$OUT/codes.map
for ((i = 0; i < LINKS; i++)); do
	echo "r$i https://example.com/landing/$i"
done >"$map"
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

# --- Parley ----------------------------------------------------------------

start_parley
log "parley: creating $LINKS links from the map"
"$parley" bench links --servers "$parley_urls" --map "$map" --clients 16 --requests 1 -q >"$OUT/parley-create.txt"
for c in $CLIENTS; do
	log "parley: $c clients for $DURATION"
	"$parley" bench links --servers "$parley_urls" --map "$map" --existing --clients "$c" --duration "$DURATION" \
		--warmup "$WARMUP" --json "$OUT/parley-c$c.json" --svg "$OUT/parley-c$c.svg" -q >"$OUT/parley-c$c.txt"
	ab_run "ab-parley-c$c" "http://127.0.0.1:${PARLEY_HTTP_PORTS[0]}/s/$code0" "$c"
done
log "stopping parley"
stop_all

# --- HAProxy ---------------------------------------------------------------

cat >"$tmp/haproxy.cfg" <<EOF
global
	maxconn 4096
defaults
	mode http
	timeout connect 5s
	timeout client 60s
	timeout server 60s
frontend redirects
	bind 127.0.0.1:$HAPROXY_PORT
	http-request set-var(txn.code) path,field(3,/)
	http-request redirect location %[var(txn.code),map($map)] code 302 if { path_beg /s/ } { var(txn.code),map($map) -m found }
	http-request return status 404 content-type text/plain string "not found"
EOF
haproxy -c -f "$tmp/haproxy.cfg" >"$OUT/logs/haproxy-check.log" 2>&1 || die "haproxy refused the configuration; see $OUT/logs/haproxy-check.log"
log "starting haproxy on 127.0.0.1:$HAPROXY_PORT"
start haproxy haproxy -db -f "$tmp/haproxy.cfg"
wait_port "$HAPROXY_PORT" haproxy
haproxy_url=http://127.0.0.1:$HAPROXY_PORT
for c in $CLIENTS; do
	log "haproxy: $c clients for $DURATION"
	"$parley" bench links --servers "$haproxy_url" --map "$map" --existing --clients "$c" --duration "$DURATION" \
		--warmup "$WARMUP" --json "$OUT/haproxy-c$c.json" --svg "$OUT/haproxy-c$c.svg" -q >"$OUT/haproxy-c$c.txt"
	ab_run "ab-haproxy-c$c" "$haproxy_url/s/$code0" "$c"
done
log "stopping haproxy"
stop_all
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt" >&2

# --- summary ---------------------------------------------------------------

{
	printf '%-22s | %-28s | %-28s | %s\n' "" "haproxy" "parley (3 nodes)" "parley / haproxy"
	printf '%-22s | %10s %8s %8s | %10s %8s %8s | %8s\n' "tool, clients" "req/s" "p50 ms" "p99 ms" "req/s" "p50 ms" "p99 ms" "req/s"
	for c in $CLIENTS; do
		h=$OUT/haproxy-c$c.json p=$OUT/parley-c$c.json
		printf '%-22s | %10.0f %8.2f %8.2f | %10.0f %8.2f %8.2f | %8s\n' "parley bench, $c" \
			"$(figure "$h" ops_per_s)" "$(figure "$h" p50)" "$(figure "$h" p99)" \
			"$(figure "$p" ops_per_s)" "$(figure "$p" p50)" "$(figure "$p" p99)" \
			"$(ratio "$(figure "$p" ops_per_s)" "$(figure "$h" ops_per_s)")"
		printf '%-22s | %10.0f %8s %8s | %10.0f %8s %8s | %8s\n' "ab -k (1 code), $c" \
			"$(ab_figure "ab-haproxy-c$c" rps)" "$(ab_figure "ab-haproxy-c$c" p50)" "$(ab_figure "ab-haproxy-c$c" p99)" \
			"$(ab_figure "ab-parley-c$c" rps)" "$(ab_figure "ab-parley-c$c" p50)" "$(ab_figure "ab-parley-c$c" p99)" \
			"$(ratio "$(ab_figure "ab-parley-c$c" rps)" "$(ab_figure "ab-haproxy-c$c" rps)")"
		he=$(figure "$h" errors) pe=$(figure "$p" errors) ahe=$(ab_figure "ab-haproxy-c$c" failed) ape=$(ab_figure "ab-parley-c$c" failed)
		if [[ $he != 0 || $pe != 0 || ${ahe:-0} != 0 || ${ape:-0} != 0 ]]; then
			printf '%-22s   errors: haproxy %s (ab %s), parley %s (ab %s)\n' "" "$he" "$ahe" "$pe" "$ape"
		fi
	done
	echo
	echo "target (docs/PRODUCT.md): parley / haproxy req/s >= 0.7. ab's percentiles are whole ms;"
	echo "ab sends every request to node 1 (one code), parley bench spreads them over the 3 nodes."
} | tee "$OUT/summary.txt"
log "reports in $OUT"
