#!/usr/bin/env bash
# keyshim's instructions per keep-alive request, counted by callgrind: the
# slope between a run of FEW and a run of MANY `GET /json` requests, one at a
# time on one connection, so that start-up and shutdown cancel out.
# Deterministic where CPU-seconds are not (a shared 2-core VM moves those by
# a fifth; the same binary gives the same count within a few instructions).
#
#   bench/callgrind_request.sh KEYSHIM LOADGEN MOCK [FEW=200] [MANY=1200]
#
# With NGINX=1, nginx (one worker, master_process off) is counted the same
# way instead of KEYSHIM, on the configuration sidebyside.sh gives it. With
# TLS=1 the upstream is HTTPS (a certificate made for the run), as a real
# provider's is. With CLOSE=1 each request asks `Connection: close` and comes
# on a connection of its own, so the count includes accepting and closing it
# (the side-by-side "client sends Connection: close" rows).
set -euo pipefail
keyshim=$1 loadgen=$2 mock=$3 few=${4:-200} many=${5:-1200}
# shellcheck source=bench/mock_pool.sh
source "$(dirname "$0")/mock_pool.sh"
start_bench_work cgr
start_mock_pool "$mock" 900 "$work"

# count N: total instructions of one proxy run that served N requests.
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
  "$loadgen" seq --port "$port" --path /json --count "$n" --warmup 0 ${CLOSE:+--close 1} >"$work/seq.$n"
  kill -TERM "$pid"
  wait "$pid" || true
  callgrind_annotate "$out" 2>/dev/null | sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}
a=$(count "$few")
b=$(count "$many")
echo "few=$few ir=$a many=$many ir=$b ir_per_request=$(((b - a) / (many - few)))"
