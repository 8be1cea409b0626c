#!/usr/bin/env bash
# compare-http-floor.sh: what the HTTP server library costs a redirect,
# apart from Parley's own code. HAProxy, a net/http server and a fasthttp
# server (scripts/bench/redirectfloor, with the timeouts of Parley's API
# and links listeners) answer GET /s/CODE with a 302 from the same map of
# $LINKS codes, and nothing else; Apache Bench (`ab -k`, one code) loads
# each in turn, the others paused (SIGSTOP), ROUNDS times, the order
# rotating from round to round. Prints the medians of each server's
# requests/s, their ratio to HAProxy's (each round's), and each server's
# CPU time per request. compare-redirects.sh measures Parley itself.
#
#   ROUNDS=3 DURATION=6s scripts/bench/compare-http-floor.sh   # as root on Debian 12
#
# Environment (defaults in brackets): DURATION [6s], CLIENTS ["1 64"],
# ROUNDS [3], LINKS [1000], OUT [./bench-results/<UTC time>], WORKDIR
# [/var/tmp].
set -euo pipefail
NAME=compare-http-floor
DURATION=${DURATION:-6s}
CLIENTS=${CLIENTS:-"1 64"}
ROUNDS=${ROUNDS:-3}
LINKS=${LINKS:-1000}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

apt_install haproxy haproxy
apt_install ab apache2-utils
stop_service haproxy
declare -A port=([haproxy]=29003 [nethttp]=29001 [fasthttp]=29002)
ports_free "${port[@]}"
{
	machine_info
	echo "haproxy: $(haproxy -v | head -1)"
	echo "duration: $DURATION, clients: $CLIENTS, rounds: $ROUNDS, links: $LINKS"
} | tee "$OUT/machine.txt" >&2

map=$OUT/codes.map
codes_map "$map" "$LINKS"
log "building redirectfloor"
(cd "$repo" && go build -o "$tmp/redirectfloor" ./scripts/bench/redirectfloor)

haproxy_redirects "$tmp/haproxy.cfg" "${port[haproxy]}" "$map"
declare -A pid
start haproxy haproxy -db -f "$tmp/haproxy.cfg"
pid[haproxy]=${pids[-1]}
for s in nethttp fasthttp; do
	start "$s" "$tmp/redirectfloor" --server "$s" --addr "127.0.0.1:${port[$s]}" --map "$map"
	pid[$s]=${pids[-1]}
done
servers=(haproxy nethttp fasthttp)
for s in "${servers[@]}"; do
	wait_port "${port[$s]}" "$s"
	for ((n = 0; ; n++)); do
		[[ $(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:${port[$s]}/s/r0" 2>/dev/null) == 302 ]] && break
		((n < 40)) || die "$s does not redirect /s/r0; see $OUT/logs/$s.log"
		sleep 0.25
	done
done

# measure SERVER C ROUND: ab against SERVER, the others paused.
measure() {
	local s=$1 c=$2 r=$3 name=$1-c$2-r$3 o s0 s1
	for o in "${servers[@]}"; do [[ $o == "$s" ]] || pause_group "${pid[$o]}"; done
	log "round $r: $s, $c clients for $DURATION"
	s0=$(procs_ticks "${pid[$s]}")
	ab -k -q -r -c "$c" -t "${DURATION%s}" -n 100000000 "http://127.0.0.1:${port[$s]}/s/r0" >"$OUT/$name.txt" 2>&1 || true
	s1=$(procs_ticks "${pid[$s]}")
	resume_group "${pid[@]}"
	awk -v s0="$s0" -v s1="$s1" -v hz="$(getconf CLK_TCK)" '
		/^Requests per second/ { rps = $4 }
		/^Complete requests/ { n = $3 }
		END { printf "rps %s\nserver_us %.1f\n", rps, (n > 0 ? 1e6 * (s1 - s0) / hz / n : 0) }' "$OUT/$name.txt" >"$OUT/$name.fig"
}
for ((r = 1; r <= ROUNDS; r++)); do
	for c in $CLIENTS; do
		for ((k = 0; k < ${#servers[@]}; k++)); do
			measure "${servers[(k + r) % ${#servers[@]}]}" "$c" "$r"
		done
	done
done
stop_all

# field SERVER C FIELD: the field of every round, one per line.
field() {
	local r
	for ((r = 1; r <= ROUNDS; r++)); do awk -v k="$3" '$1 == k { print $2 }' "$OUT/$1-c$2-r$r.fig"; done
}
{
	printf 'medians of %s rounds of %s each (ab -k, one code); each server alone on the machine\n\n' "$ROUNDS" "$DURATION"
	printf '%-9s %-9s | %10s | %-22s | %s\n' clients server "req/s" "÷ haproxy (each round)" "server CPU us/request"
	for c in $CLIENTS; do
		for s in "${servers[@]}"; do
			# shellcheck disable=SC2046 # one number per word
			rs=$(paste <(field "$s" "$c" rps) <(field haproxy "$c" rps) | while read -r a b; do ratio "$a" "$b"; echo; done)
			# shellcheck disable=SC2046
			printf '%-9s %-9s | %10.0f | %-6s %-15s | %.1f\n' "$c" "$s" "$(median $(field "$s" "$c" rps))" \
				"$(median $rs)" "($(paste -sd' ' <<<"$rs"))" "$(median $(field "$s" "$c" server_us))"
		done
	done
} | tee "$OUT/summary.txt"
log "reports in $OUT"
