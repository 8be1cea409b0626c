# lib.sh: what the compare-*.sh scripts share (sourced, not run).
#
# Before sourcing, set NAME (the script's name for messages). It defines
# OUT, WORKDIR, KEEP_DATA, ROUTE, PARLEY_BIN and PARLEY_BENCH_BIN defaults, a temporary directory
# $tmp removed on exit with every process started through `start`, and the
# helpers below. Everything listens on 127.0.0.1 below the kernel's
# ephemeral port range.

OUT=${OUT:-./bench-results/$(date -u +%Y%m%dT%H%M%SZ)}
WORKDIR=${WORKDIR:-/var/tmp}
KEEP_DATA=${KEEP_DATA:-0}
PARLEY_HTTP_PORTS=(27070 27080 27090)
PARLEY_CLUSTER_PORTS=(27071 27081 27091)

# ROUTE says how the compare scripts send Parley's requests: 1 (default),
# each to the node leading its partition (parley bench --route, the Go
# client's Pool); 0, round-robin over the nodes, each forwarding to the
# leader, as the peers' clients go. route_flag is the parley bench flag,
# route_info the machine.txt line.
ROUTE=${ROUTE:-1}
[[ $ROUTE == 0 || $ROUTE == 1 ]] || { echo "ROUTE: $ROUTE is neither 0 nor 1" >&2; exit 2; }
route_flag() { ((ROUTE)) && echo --route=true || echo --route=false; }
route_info() { echo "parley routing: $( ((ROUTE)) && echo "to each partition's leader (ROUTE=1)" || echo "round-robin over the nodes (ROUTE=0)")"; }

log() { printf '==> %s\n' "$*" >&2; }
die() { printf '%s: %s\n' "$NAME" "$*" >&2; exit 1; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
tmp=$(mktemp -d "$WORKDIR/parley-$NAME.XXXXXX")
pids=() # processes started here, each the leader of its own process group

# stop_all stops every process group started here: SIGTERM, then SIGKILL
# after 15 s (a group paused with pause_group is continued first).
stop_all() {
	local pid i
	for pid in "${pids[@]}"; do
		kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
		kill -CONT -- "-$pid" 2>/dev/null || true
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

# start NAME CMD...: runs CMD in its own session, logging to
# $OUT/logs/NAME.log.
start() {
	local name=$1
	shift
	setsid "$@" >"$OUT/logs/$name.log" 2>&1 &
	pids+=("$!")
}

# pause_group PID... stops the process groups of the given leaders
# (SIGSTOP): a server that is not being measured takes no CPU.
pause_group() {
	local pid
	for pid in "$@"; do kill -STOP -- "-$pid"; done
}

# resume_group PID... continues groups pause_group stopped.
resume_group() {
	local pid
	for pid in "$@"; do kill -CONT -- "-$pid"; done
}

# busy_ticks prints the machine's busy and total CPU time so far, in clock
# ticks (idle, iowait and steal are not busy).
busy_ticks() {
	awk '/^cpu / { t = $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; print t - $5 - $6 - $9, t }' /proc/stat
}

# procs_ticks PID... prints the CPU time (user + system, all threads), in
# clock ticks, the processes have used so far.
procs_ticks() {
	local pid files=()
	for pid in "$@"; do files+=("/proc/$pid/stat"); done
	awk '{ s += $14 + $15 } END { print s + 0 }' "${files[@]}" 2>/dev/null || echo 0
}

# group_ticks PGID... prints the CPU time (user + system, all threads), in
# clock ticks, used so far by every process now in those process groups
# (the groups `start` makes: a server and whatever its start script spawned).
group_ticks() {
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v want=" $* " '{
		sub(/^.*\) /, "") # past "pid (comm) ": $3 is the process group, $12 and $13 the CPU time
		if (index(want, " " $3 " ")) s += $12 + $13
	} END { print s + 0 }'
}

# children_ticks prints the CPU time (user + system), in clock ticks, of
# every child of this shell that has ended and been waited for: a
# benchmark command run in the foreground between two calls is the
# difference (plus the few ticks of the call's own subshell).
children_ticks() {
	awk '{ sub(/^.*\) /, ""); print $14 + $15 }' "/proc/$$/stat"
}

# median prints the median of its numeric arguments ("-" when none).
median() {
	(($#)) || { echo -; return; }
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# port_free PORT fails when something on loopback listens on PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ports_free PORT... dies when one of the ports is taken.
ports_free() {
	local p
	for p in "$@"; do
		port_free "$p" || die "port $p on 127.0.0.1 is taken"
	done
}

# wait_port PORT WHAT: waits up to 60 s for a listener on PORT.
wait_port() {
	local n
	for ((n = 0; n < 240; n++)); do
		port_free "$1" || return 0
		sleep 0.25
	done
	die "$2 does not listen on port $1 after 60 s; see $OUT/logs"
}

# apt_install CMD PACKAGE...: installs the packages when CMD is missing.
apt_install() {
	local cmd=$1
	shift
	command -v "$cmd" >/dev/null && return 0
	[[ $(id -u) == 0 ]] || die "$cmd missing: run as root, or apt-get install $*"
	log "installing $*"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >>"$OUT/logs/apt.log" 2>&1
}

# stop_service NAME: stops a packaged service that the install started, so
# that it does not share the CPUs during the run.
stop_service() {
	if command -v systemctl >/dev/null && systemctl is-active --quiet "$1" 2>/dev/null; then
		log "stopping the packaged $1 service during the run (systemctl stop $1)"
		systemctl stop "$1" || true
	fi
}

# http_ok URL succeeds when URL answers 2xx.
http_ok() { curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; }

# figure FILE FIELD prints one figure of a bench JSON report: ops_per_s,
# errors, p50/p99 (latency percentiles, ms), or params.NAME.
figure() {
	case $2 in
	p[0-9]*) jq -r --argjson p "${2#p}" '.latency.percentiles[] | select(.p == $p) | .ms' "$1" ;;
	params.*) jq -r --arg k "${2#params.}" '.params[$k] // "-"' "$1" ;;
	*) jq -r ".$2" "$1" ;;
	esac
}

# ratio A B prints A/B with two decimals ("-" when B is 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

# peer_cells PEER PARLEY F50 prints, without a newline, the cells of a
# comparison row after its label columns, from two JSON reports: each
# side's ops/s, p50 and p99 ms, Parley's ops/s and p99 over the peer's,
# and each side's p50 over the fsync p50 F50.
peer_cells() {
	local so s50 s99 po p50 p99
	so=$(figure "$1" ops_per_s) s50=$(figure "$1" p50) s99=$(figure "$1" p99)
	po=$(figure "$2" ops_per_s) p50=$(figure "$2" p50) p99=$(figure "$2" p99)
	printf '%8.0f %9.2f %9.2f | %8.0f %9.2f %9.2f | %7s %8s | %8s %8s' \
		"$so" "$s50" "$s99" "$po" "$p50" "$p99" "$(ratio "$po" "$so")" "$(ratio "$p99" "$s99")" \
		"$(ratio "$s50" "$3")" "$(ratio "$p50" "$3")"
}

# peer_errors NAME PEER PARLEY prints a row's errors line when either
# report (JSON) counted errors; NAME names the peer.
peer_errors() {
	local se pe
	se=$(figure "$2" errors) pe=$(figure "$3" errors)
	if [[ $se != 0 || $pe != 0 ]]; then
		printf '%-8s   errors: %s %s, parley %s (see the .txt reports)\n' "" "$1" "$se" "$pe"
	fi
}

# build_parley sets $parley to PARLEY_BIN or a fresh build.
build_parley() {
	if [[ -n ${PARLEY_BIN:-} ]]; then
		parley=$PARLEY_BIN
		return
	fi
	command -v go >/dev/null || die "go missing: install Go (the version in go.mod) or set PARLEY_BIN"
	log "building parley"
	(cd "$repo" && go build -o "$tmp/bin/parley" ./cmd/parley)
	parley=$tmp/bin/parley
}

# build_parley_bench sets $parley_bench to PARLEY_BENCH_BIN or a fresh
# build of parley-bench, the binary of the peer workloads (etcd-kv,
# nats-publish, rabbitmq-queue), which the server binary does not carry.
build_parley_bench() {
	if [[ -n ${PARLEY_BENCH_BIN:-} ]]; then
		parley_bench=$PARLEY_BENCH_BIN
		return
	fi
	command -v go >/dev/null || die "go missing: install Go (the version in go.mod) or set PARLEY_BENCH_BIN"
	log "building parley-bench"
	(cd "$repo" && go build -o "$tmp/bin/parley-bench" ./cmd/parley-bench)
	parley_bench=$tmp/bin/parley-bench
}

# machine_info prints the machine, versions and load for the record.
machine_info() {
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "host: $(uname -srm), cpus: $(nproc)"
	echo "disk: $(df -PhT "$tmp" | awk 'NR == 2 { print $1 ", " $2 }')"
	echo "parley: $(if [[ -n ${PARLEY_BIN:-} ]]; then echo "$PARLEY_BIN"; else cd "$repo" && git describe --always --dirty 2>/dev/null; fi)"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# settled reads GET /api/v1/cluster on stdin and prints yes when every
# partition has a leader and three replicas and no move is in progress.
# The metadata group (partition 0) keeps a learner on every node past its
# three voters; builds before 2026-11-26 list those as moves in phase
# "learner" for as long as the nodes live, so they are not waited for.
settled() {
	jq -r 'if ([.partitions[] | select(.leader != "" and (.replicas | length) == 3)] | length) == (.partitions | length)
		and ([(.moves // [])[] | select(.partition != 0 or .phase != "learner")] | length) == 0 then "yes" else "no" end'
}

# start_parley [NODES] starts a cluster of NODES nodes (default 3; node i
# listens for HTTP on 27070 + 10(i-1) and for internal traffic one port
# above; n1 creates the cluster, the others join with the join token n1
# wrote), registers and signs in the benchmark user, exports PARLEY_TOKEN,
# waits until every partition has a leader and three replicas, and sets
# $parley_urls and $parley_pids (node i's process is ${parley_pids[i-1]}).
# PARLEY_SERVE_FLAGS (e.g. --insecure, --partitions 48) are given to every
# node. PPROF=1 serves each node's Go profiles (/debug/pprof/) on 127.0.0.1
# at its HTTP port + 5 (27075, 27085, 27095...). Each node serves short
# links alone (--links) at its HTTP port + 7 (27077...), unless
# LINKS_LISTENER=0 (a build older than that flag; not PARLEY_LINKS, which
# parley serve reads as --links). PARLEY_SETTLE_S (60) is
# how long the partitions may take to settle (more nodes: more moves).
# The per-user limits (docs/LIMITS.md) are off for benchmarks: one user
# posts, sends and streams as fast as the cluster goes.
PARLEY_BENCH_LIMITS=(--limit-posts off --limit-queue-sends off --limit-room-creates off
	--limit-queue-creates off --limit-link-creates off --limit-streams 0 --limit-long-polls 0)

start_parley() {
	local nodes=${1:-3} i n status url0=http://127.0.0.1:27070
	PARLEY_HTTP_PORTS=() PARLEY_CLUSTER_PORTS=() PARLEY_LINKS_PORTS=()
	for ((i = 0; i < nodes; i++)); do
		PARLEY_HTTP_PORTS+=($((27070 + 10 * i)))
		PARLEY_CLUSTER_PORTS+=($((27071 + 10 * i)))
		PARLEY_LINKS_PORTS+=($((27077 + 10 * i)))
	done
	ports_free "${PARLEY_HTTP_PORTS[@]}" "${PARLEY_CLUSTER_PORTS[@]}" "${PARLEY_LINKS_PORTS[@]}"
	parley_urls="" parley_pids=()
	for ((i = 0; i < nodes; i++)); do
		parley_urls+="${parley_urls:+,}http://127.0.0.1:${PARLEY_HTTP_PORTS[i]}"
	done
	log "starting parley: $nodes nodes on $parley_urls"
	for ((i = 1; i <= nodes; i++)); do
		start_parley_node "$i"
		wait_parley_ready "$i"
		if ((i == 1)); then
			export PARLEY_CONFIG_DIR="$tmp/parley-config"
			unset PARLEY_TOKEN # a previous cluster's session
			local pw="parley-bench-$RANDOM-$RANDOM"
			printf '%s\n' "$pw" | "$parley" user register bench --password-stdin --server "$url0" >/dev/null
			printf '%s\n' "$pw" | "$parley" user login bench --password-stdin --server "$url0" >/dev/null
			# Logins are kept per cluster, listing the URLs they serve (older
			# files: per URL).
			PARLEY_TOKEN=$(jq -r --arg u "$url0" '(.[$u] // first(.[] | select(any(.servers[]?; . == $u)))).token' "$PARLEY_CONFIG_DIR/logins.json")
			export PARLEY_TOKEN
		fi
	done
	for ((n = 0; ; n++)); do
		status=$(curl -fsS --max-time 5 -H "Authorization: Bearer $PARLEY_TOKEN" "$url0/api/v1/cluster" || true)
		[[ -n $status && $(settled <<<"$status") == yes ]] && break
		((n < 2 * ${PARLEY_SETTLE_S:-60})) || die "parley partitions did not reach 3 replicas with leaders in ${PARLEY_SETTLE_S:-60} s"
		sleep 0.5
	done
	sleep 3 # leaders settle
}

# start_parley_node I [LOG] starts (or, on its data directory, restarts)
# node I of the cluster start_parley starts, with the same flags, logging to
# $OUT/logs/LOG.log (default parley-nI), and sets ${parley_pids[I-1]}.
# Node 1 creates the cluster; the others join it.
start_parley_node() {
	local i=$1 logname=${2:-parley-n$1} join=() pprof=() links=()
	local k=$((i - 1))
	[[ ${PPROF:-0} == 1 ]] && pprof=(--pprof "127.0.0.1:$((PARLEY_HTTP_PORTS[k] + 5))")
	[[ ${LINKS_LISTENER:-1} == 1 ]] && links=(--links "127.0.0.1:${PARLEY_LINKS_PORTS[k]}")
	if ((i > 1)); then
		join=(--join "127.0.0.1:${PARLEY_CLUSTER_PORTS[0]}")
		[[ -f $tmp/parley/n1/join-token ]] && join+=(--join-token "$(cat "$tmp/parley/n1/join-token")")
	fi
	# shellcheck disable=SC2086 # PARLEY_SERVE_FLAGS is a list of flags
	start "$logname" "$parley" serve --id "n$i" --data-dir "$tmp/parley/n$i" \
		--http "127.0.0.1:${PARLEY_HTTP_PORTS[k]}" --cluster "127.0.0.1:${PARLEY_CLUSTER_PORTS[k]}" \
		--log-level warn ${PARLEY_SERVE_FLAGS:-} "${join[@]}" "${PARLEY_BENCH_LIMITS[@]}" "${pprof[@]}" "${links[@]}"
	parley_pids[k]=${pids[-1]}
}

# wait_parley_ready I waits up to 60 s for node I to answer GET /readyz.
wait_parley_ready() {
	local n
	for ((n = 0; ; n++)); do
		http_ok "http://127.0.0.1:${PARLEY_HTTP_PORTS[$1 - 1]}/readyz" && return 0
		((n < 120)) || die "parley node $1 not ready in 60 s; see $OUT/logs/parley-n$1.log"
		sleep 0.5
	done
}

# codes_map FILE N writes N short-link codes and their URLs, "rI URL" a
# line, for HAProxy's map and `parley bench links --map`.
codes_map() {
	local i
	for ((i = 0; i < $2; i++)); do
		echo "r$i https://example.com/landing/$i"
	done >"$1"
}

# haproxy_redirects CFG PORT MAP writes an HAProxy configuration answering
# GET /s/CODE on 127.0.0.1:PORT with a 302 to CODE's URL in MAP, and 404
# to anything else, and checks it.
haproxy_redirects() {
	cat >"$1" <<EOC
global
	maxconn 4096
defaults
	mode http
	timeout connect 5s
	timeout client 60s
	timeout server 60s
frontend redirects
	bind 127.0.0.1:$2
	http-request set-var(txn.code) path,field(3,/)
	http-request redirect location %[var(txn.code),map($3)] code 302 if { path_beg /s/ } { var(txn.code),map($3) -m found }
	http-request return status 404 content-type text/plain string "not found"
EOC
	haproxy -c -f "$1" >"$OUT/logs/haproxy-check.log" 2>&1 || die "haproxy refused the configuration; see $OUT/logs/haproxy-check.log"
}
