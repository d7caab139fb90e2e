#!/usr/bin/env bash
# keyshim's instructions per relayed byte of a bulk event stream, counted by
# callgrind (deterministic where timings are not: a shared machine moves
# CPU-seconds, not instruction counts much).
#
#   bench/callgrind_sse.sh KEYSHIM MOCK [SIZE=1024] [EVENTS=20000] [BATCH=1]
#
# Starts MOCK (bench_mock_upstream) and KEYSHIM under callgrind on ephemeral
# 127.0.0.1 ports, fetches /sse?events=EVENTS&size=SIZE&batch=BATCH through
# it once with curl, stops both, and prints keyshim's total instructions, the
# body bytes and instructions per byte, the usage meter's share (inclusive
# instructions of UsageMeter::feed), then callgrind_annotate's top
# functions. Read sizes follow the machine's timing, so the total moves by a
# few per cent between runs; the meter's own functions do not.
set -euo pipefail
keyshim=$1 mock=$2 size=${3:-1024} events=${4:-20000} batch=${5:-1}
# shellcheck source=bench/mock_pool.sh
source "$(dirname "$0")/mock_pool.sh"
start_bench_work cg
# KEEP_CG=FILE keeps callgrind's output, written when keyshim has stopped.
keep_output_then_stop() {
  stop_bench_processes
  if [[ -n ${KEEP_CG:-} ]]; then cp "$work/cg.out" "$KEEP_CG"; fi
  stop_bench_work
}
trap keep_output_then_stop EXIT
start_mock_pool "$mock" 600 "$work"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$keyshim" serve -c "$work/pool.toml" \
  --listen "127.0.0.1:$port" -q 2>"$work/vg.err" &
kpid=$!
pids+=("$kpid")
for _ in $(seq 1 300); do curl -s -o /dev/null "http://127.0.0.1:$port/health" && break; sleep 0.1; done
bytes=$(curl -s -o /dev/null -w '%{size_download}' \
  "http://127.0.0.1:$port/sse?events=$events&size=$size&batch=$batch")
kill -TERM "$kpid"
wait "$kpid" || true
total=$(callgrind_annotate "$work/cg.out" 2>/dev/null | sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
meter=$(callgrind_annotate --inclusive=yes "$work/cg.out" 2>/dev/null |
  sed -n 's/^ *\([0-9,]*\) .*keyshim::policy::UsageMeter::feed(.*/\1/p' | head -1 | tr -d ,)
echo "size=$size events=$events batch=$batch body_bytes=$bytes instructions=$total" \
  "ir_per_byte=$(awk -v t="$total" -v b="$bytes" 'BEGIN { printf "%.2f", t / b }')" \
  "usage_meter_ir=${meter:-0} meter_ir_per_byte=$(awk -v t="${meter:-0}" -v b="$bytes" 'BEGIN { printf "%.3f", t / b }')"
callgrind_annotate "$work/cg.out" 2>/dev/null | sed -n '/file:function/,$p' | head -25
