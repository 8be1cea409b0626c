#!/usr/bin/env bash
# workloads.sh: every `parley bench` workload once on a local 3-node
# cluster, with 1 and 64 clients, beside this disk's fsync time measured in
# the same run; prints one table. Reports (JSON, text, SVG) go to $OUT.
#
#   DURATION=5s scripts/bench/workloads.sh
#
# Environment (defaults in brackets): DURATION [10s], WARMUP [1s],
# CLIENTS ["1 64"], SIZE [200] (message length), OUT, WORKDIR [/var/tmp],
# PARLEY_BIN, KEEP_DATA [0]. chat-fanout (100 rooms x 100 subscribers) runs
# when the nodes serve GET /api/v1/stream.
set -euo pipefail
NAME=workloads
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-1s}
CLIENTS=${CLIENTS:-"1 64"}
SIZE=${SIZE:-200}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

apt_install jq jq
build_parley
machine_info | tee "$OUT/machine.txt" >&2

log "fsync baseline in $tmp"
"$parley" bench fsync --dir "$tmp" --count 2000 --size 256 --json "$OUT/fsync.json" -q >"$OUT/fsync.txt"
start_parley

# run NAME ARGS...: one benchmark against the cluster.
run() {
	local name=$1
	shift
	log "$name"
	"$parley" bench "$@" --servers "$parley_urls" --duration "$DURATION" --warmup "$WARMUP" \
		--json "$OUT/$name.json" --svg "$OUT/$name.svg" -q >"$OUT/$name.txt" || log "$name failed: see $OUT/$name.txt"
}
rows=()
for c in $CLIENTS; do
	run "chat-post-c$c" chat-post --clients "$c" --rooms 16 --size "$SIZE" && rows+=("chat-post-c$c")
	run "queue-c$c" queue --clients "$c" --size "$SIZE" --queues 1 && rows+=("queue-c$c")
	run "links-create-c$c" links --mode create --clients "$c" && rows+=("links-create-c$c")
	run "links-redirect-c$c" links --mode redirect --clients "$c" && rows+=("links-redirect-c$c")
	run "kv-put-c$c" kv --mix put --clients "$c" --value-size "$SIZE" && rows+=("kv-put-c$c")
done
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $PARLEY_TOKEN" "http://127.0.0.1:${PARLEY_HTTP_PORTS[0]}/api/v1/stream")
if [[ $code != 404 ]]; then
	run chat-fanout chat-fanout --clients 16 --rooms 100 --subscribers 100 --size "$SIZE" && rows+=(chat-fanout)
else
	log "chat-fanout skipped: the nodes do not serve GET /api/v1/stream"
fi
stop_all
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt" >&2

{
	printf 'fsync of 256 bytes: p50 %.3f ms, p99 %.3f ms\n\n' "$(figure "$OUT/fsync.json" p50)" "$(figure "$OUT/fsync.json" p99)"
	printf '%-22s %10s %8s %8s %8s %7s\n' workload "ops/s" "p50 ms" "p99 ms" "errors" "p50/fs"
	for r in "${rows[@]}"; do
		f=$OUT/$r.json
		[[ -s $f ]] || continue
		printf '%-22s %10.0f %8.2f %8.2f %8s %7s\n' "$r" "$(figure "$f" ops_per_s)" "$(figure "$f" p50)" "$(figure "$f" p99)" \
			"$(figure "$f" errors)" "$(ratio "$(figure "$f" p50)" "$(figure "$OUT/fsync.json" p50)")"
	done
	if [[ -s $OUT/chat-fanout.json ]]; then
		f=$OUT/chat-fanout.json
		echo
		echo "chat-fanout: deliveries $(figure "$f" params.deliveries)"
		echo "  delivery p50 $(figure "$f" params.delivery_p50_ms) ms, p99 $(figure "$f" params.delivery_p99_ms) ms;" \
			"post p99 $(figure "$f" p99) ms; delivery p99 / post p99 $(figure "$f" params.delivery_p99_over_post_p99) (target <= 3)"
	fi
} | tee "$OUT/summary.txt"
log "reports in $OUT"
