#!/usr/bin/env bash
# What one new event stream costs the proxy, counted by callgrind: the slope
# between a run of FEW and a run of MANY concurrent `/hold` streams (the
# side-by-side "held streams" rows), so that start-up and shutdown cancel
# out. Each stream is a new client connection, a new upstream connection,
# the first-event probe, one relayed event and both connections' close.
#
#   bench/callgrind_held.sh KEYSHIM LOADGEN MOCK [FEW=100] [MANY=400]
#
# With NGINX=1, nginx (one worker, master_process off) is counted the same
# way instead of KEYSHIM, on the configuration sidebyside.sh gives it.
set -euo pipefail
keyshim=$1 loadgen=$2 mock=$3 few=${4:-100} many=${5:-400}
# shellcheck source=bench/mock_pool.sh
source "$(dirname "$0")/mock_pool.sh"
start_bench_work cgh
start_mock_pool "$mock" 900 "$work"

# count N: total instructions of one proxy run that held N streams at once.
count() {
  local n=$1 port out="$work/cg.$1" pid
  port=$("$loadgen" freeport)
  if [[ -n ${NGINX:-} ]]; then
    write_nginx_conf "$work/ng" "$port"
    valgrind --tool=callgrind --callgrind-out-file="$out" nginx -p "$work/ng" -c "$work/ng/nginx.conf" \
      2>"$work/vg.err" &
  else
    valgrind --tool=callgrind --callgrind-out-file="$out" "$keyshim" serve -c "$work/pool.toml" \
      --listen "127.0.0.1:$port" -q 2>"$work/vg.err" &
  fi
  pid=$!
  "$loadgen" wait --port "$port" --timeout 60 >/dev/null
  "$loadgen" held --port "$port" --streams "$n" --hold-ms 300 --timeout 60 >"$work/held.$n"
  grep -q " completed=$n " "$work/held.$n" || echo "callgrind_held: $(cat "$work/held.$n")" >&2
  kill -TERM "$pid"
  wait "$pid" || true
  callgrind_annotate "$out" 2>/dev/null | sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}
a=$(count "$few")
b=$(count "$many")
echo "few=$few ir=$a many=$many ir=$b ir_per_stream=$(((b - a) / (many - few)))"
