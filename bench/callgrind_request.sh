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
#
# With HELD=1 it counts what one new event stream costs instead (the
# held-streams rows): FEW (default 100) and MANY (400) concurrent `/hold`
# streams, each a new client connection and upstream connection, the
# first-event probe, one relayed event and the client's hang-up. That count
# depends a little on timing: under valgrind the streams last long enough
# for every exchange's hang-up watch to start.
set -euo pipefail
keyshim=$1 loadgen=$2 mock=$3
if [[ -n ${HELD:-} ]]; then
  few=${4:-100} many=${5:-400} unit=stream
else
  few=${4:-200} many=${5:-1200} unit=request
fi
# shellcheck source=bench/mock_pool.sh
source "$(dirname "$0")/mock_pool.sh"
start_bench_work cgr
start_mock_pool "$mock" 900 "$work"

# load N: N requests one at a time, or N streams held at once.
load() {
  local n=$1 port=$2
  if [[ -n ${HELD:-} ]]; then
    "$loadgen" held --port "$port" --streams "$n" --hold-ms 300 --timeout 60 >"$work/load.$n"
    grep -q " completed=$n " "$work/load.$n" || echo "callgrind_request: $(cat "$work/load.$n")" >&2
  else
    "$loadgen" seq --port "$port" --path /json --count "$n" --warmup 0 ${CLOSE:+--close 1} >"$work/load.$n"
  fi
}

# count N: total instructions of one proxy run under load N.
count() {
  local n=$1 port out="$work/cg.$1" pid
  port=$("$loadgen" freeport)
  start_proxy_under "$port" "$keyshim" valgrind --tool=callgrind --callgrind-out-file="$out"
  pid=$proxy_pid
  "$loadgen" wait --port "$port" --timeout 60 >/dev/null
  load "$n" "$port"
  kill -TERM "$pid"
  wait "$pid" || true
  callgrind_annotate "$out" 2>/dev/null | sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}
a=$(count "$few")
b=$(count "$many")
echo "few=$few ir=$a many=$many ir=$b ir_per_$unit=$(((b - a) / (many - few)))"
