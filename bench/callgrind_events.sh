#!/usr/bin/env bash
# What one paced event costs the proxy: 4 `/ts` streams whose events come
# 2 ms apart (sidebyside.sh's per-event latency row), so that every event is
# a read of its own, as a provider's tokens are. The slope between a run of
# FEW and one of MANY events per stream, so that start, the four requests
# and stop cancel out:
#
#   bench/callgrind_events.sh KEYSHIM LOADGEN MOCK [FEW=50] [MANY=250]
#
# prints the proxy's instructions per event, counted by callgrind. With
# STRACE=1 the proxy runs under `strace -f -c` instead, and the line gives
# its system calls per event, by name (recvfrom or recvmsg, sendmsg or
# writev, epoll_wait, epoll_ctl), and how many of the reads failed (EAGAIN).
# epoll_wait per event depends on how often the four streams' events fall
# due together (0.4 to 1.1 between runs of one binary); the others do not.
# With NGINX=1, nginx (one worker, master_process off) is measured the same
# way instead of KEYSHIM; VERBOSE=1 shows both runs' strace counts.
set -euo pipefail
keyshim=$1 loadgen=$2 mock=$3 few=${4:-50} many=${5:-250}
streams=4
# shellcheck source=bench/mock_pool.sh
source "$(dirname "$0")/mock_pool.sh"
start_bench_work cge
start_mock_pool "$mock" 900 "$work"

# run N OUT PORT: the proxy under its tool, N events per stream through it.
run() {
  local n=$1 out=$2 port=$3 pid tool
  if [[ -n ${STRACE:-} ]]; then
    tool=(strace -f -c -o "$out")
  else
    tool=(valgrind --tool=callgrind --callgrind-out-file="$out")
  fi
  start_proxy_under "$port" "$keyshim" "${tool[@]}"
  pid=$proxy_pid
  "$loadgen" wait --port "$port" --timeout 60 >/dev/null
  "$loadgen" events --port "$port" --streams "$streams" --events "$n" --gap-us 2000 --timeout 60 >"$work/ev.$n"
  grep -q ' complete=1' "$work/ev.$n" || echo "callgrind_events: $(cat "$work/ev.$n")" >&2
  # strace passes no SIGTERM on to the program it ran: stop that one.
  kill -TERM "$(pgrep -P "$pid" || echo "$pid")"
  wait "$pid" || true
}

# calls N: "name=calls ..." (and NAME_failed= for reads) of one strace run.
calls() {
  local n=$1 out="$work/st.$1"
  run "$n" "$out" "$("$loadgen" freeport)"
  awk '$NF ~ /^(recvfrom|recvmsg|sendmsg|writev|epoll_wait|epoll_ctl)$/ {
         failed = ($5 ~ /^[0-9]+$/) ? $5 : 0
         printf "%s=%d ", $NF, $4
         if ($NF ~ /^recv/) printf "%s_failed=%d ", $NF, failed }' "$out"
}

# instructions N: the total of one callgrind run.
instructions() {
  local n=$1 out="$work/cg.$1"
  run "$n" "$out" "$("$loadgen" freeport)"
  callgrind_annotate "$out" 2>/dev/null | sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}

events=$((streams * (many - few)))
if [[ -n ${STRACE:-} ]]; then
  a=$(calls "$few")
  b=$(calls "$many")
  [[ -n ${VERBOSE:-} ]] && echo "few=$few: $a" && echo "many=$many: $b"
  printf 'events=%d per event:' "$events"
  for name in recvfrom recvfrom_failed recvmsg recvmsg_failed sendmsg writev epoll_wait epoll_ctl; do
    x=$(grep -o "$name=[0-9]*" <<<"$a" | cut -d= -f2 || true)
    y=$(grep -o "$name=[0-9]*" <<<"$b" | cut -d= -f2 || true)
    awk -v n="$name" -v x="${x:-0}" -v y="${y:-0}" -v e="$events" 'BEGIN { printf " %s=%.2f", n, (y - x) / e }'
  done
  echo
else
  a=$(instructions "$few")
  b=$(instructions "$many")
  echo "few=$few ir=$a many=$many ir=$b events=$events ir_per_event=$(((b - a) / events))"
fi
