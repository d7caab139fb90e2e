# The rows on the plain-HTTP mock (sourced by bench/sidebyside.sh): for each
# row a measure_* function that fills R[...] and a table_* function that
# prints it.
# shellcheck disable=SC2046 # command lines as words, see common.sh

# ------------------------------------------------------------ idle
measure_idle() {
  local t line
  for t in keyshim nginx; do
    [[ " ${targets[*]} " == *" $t "* ]] || continue
    sleep 0.5
    line=$(lg procinfo 5 --pids "$(pids_of "$t")")
    R[idle_rss:$t]=$(mib "$(kv "$line" rss_kb)")
    R[idle_threads:$t]=$(kv "$line" threads)
    idle_fds[$t]=$(kv "$line" fds)
    log "[$t] idle: $line"
    if [[ $t == nginx ]]; then
      R[idle_rss_worker:$t]=$(mib "$(kv "$(lg procinfo 5 --pids "$ng_worker")" rss_kb)")
    fi
  done
}

# ------------------------------------------------------------ TTFB
# A round of ttfb_count requests takes a fraction of a second, and a round's
# p50 moves by ±20 % with what else the machine does in it: this row runs
# ttfb_rounds rounds (9 in a full run), more than the others, for a median
# that holds from one run to the next.
ttfb_run() { lg seq 60 $(conn_of "$1") --path /json --count "$ttfb_count" --warmup-count 50; }
# measure_ttfb [PREFIX]: keys PREFIXttfb, PREFIXttfb99 (for the upstream $up).
measure_ttfb() {
  local p=${1:-} rounds=$ttfb_rounds # interleave and agg read it
  interleave "${p}ttfb" ttfb_run
  agg "${p}ttfb" "${p}ttfb" ttfb_p50_us
  agg "${p}ttfb" "${p}ttfb99" ttfb_p99_us
}
table_ttfb() {
  local p=${1:-} what=${2:-}
  header "TTFB, keep-alive, one request at a time${what}, median of $ttfb_rounds rounds, µs (target: added ≤ nginx's)"
  row3 "p50" "${p}ttfb" no
  row3 "p99" "${p}ttfb99" no
  row_added "p50 added over direct" "${p}ttfb"
}

# ------------------------------------------------------------ per-event latency
events_run() {
  lg events 60 $(conn_of "$1") --streams "$ev_streams" --events "$ev_events" --gap-us "$ev_gap_us"
}
measure_events() {
  interleave events events_run
  agg events ev50 lat_p50_us
  agg events ev99 lat_p99_us
}
table_events() {
  header "per-event latency, /ts $ev_streams×$ev_events events ${ev_gap_us} µs apart, median of $rounds rounds, µs (target: added ≤ nginx's)"
  row3 "p50" ev50 no
  row3 "p99" ev99 no
  row_added "p50 added over direct" ev50
}

# ------------------------------------------------------------ req/s and CPU
rps_close=0
rps_run() {
  lg rps $((rps_seconds + 30)) $(conn_of "$1") --path /json --conc "$conc" --close "$rps_close" \
    --seconds "$rps_seconds" --warmup "$rps_warmup" --pids "$(pids_of "$1")"
}
# measure_rps PREFIX CONC [CLOSE=0]: keys PREFIXrps$CONC, PREFIXcpu$CONC
# (PREFIX "close" etc. names the variant).
measure_rps() {
  local p=$1
  conc=$2 rps_close=${3:-0}
  interleave "${p}rps c=$conc" rps_run
  agg "${p}rps c=$conc" "${p}rps$conc" rps
  agg "${p}rps c=$conc" "${p}cpu$conc" cpu_us_per_req proxies
  rps_close=0
}
table_cpu() {
  local p=${1:-} what=${2:-} c
  header "CPU µs per non-streaming request${what}, median of $rounds rounds (proxy's utime+stime / requests; target keyshim ≤ 1.1 × nginx)"
  for c in "${@:3}"; do row3 "c=$c" "${p}cpu$c"; done
}
table_rps() {
  local p=${1:-} what=${2:-} c
  header "req/s, non-streaming${what}, median of $rounds rounds of ${rps_seconds} s (target keyshim ≥ nginx)"
  for c in "${@:3}"; do row3 "c=$c" "${p}rps$c"; done
  # With Connection: close, direct over TLS pays a full handshake per
  # request and the proxies do not: no ratio to direct there.
  [[ $p == *close ]] && return 0
  row "keyshim / direct" "" "$(ratio "$(val "${p}rps$3" keyshim)" "$(val "${p}rps$3" direct)")" \
    "$(ratio "$(val "${p}rps$3" nginx)" "$(val "${p}rps$3" direct)")" "(c=$3)"
}

# ------------------------------------------------------------ bulk SSE
bulk_run() {
  lg bulk $((bulk_seconds + 30)) $(conn_of "$1") --streams "$bulk_streams" --size "$bulk_size" \
    --batch "$bulk_batch" --events "$bulk_events" --seconds "$bulk_seconds" --warmup "$bulk_warmup" \
    --pids "$(pids_of "$1")"
}
# measure_bulk KEY SIZE BATCH: keys KEY (GB/s) and KEYcpu (CPU-s per GB);
# BATCH events per chunk (0: as many as fill 64 KiB).
measure_bulk() {
  local key=$1
  bulk_size=$2 bulk_batch=$3
  interleave "$key" bulk_run
  agg "$key" "$key" gb_per_s
  agg "$key" "${key}cpu" cpu_s_per_gb proxies
}
table_bulk() {
  local key=$1 size=$2 batch=$3 what=${4:-} per
  per=$( ((batch == 1)) && echo "one event per chunk" || echo "64 KiB chunks")
  header "bulk SSE${what}, $bulk_streams streams of ${size}-byte events, $per, median of $rounds rounds of ${bulk_seconds} s (target ≥ nginx GB/s; ≤ nginx CPU-s/GB)"
  row3 "GB/s (body bytes)" "$key"
  row3 "proxy CPU-s per GB" "${key}cpu"
}

# ------------------------------------------------------------ failover
# Two fresh instances on the same pool. /json-fo answers 429 (Retry-After:
# 30) to key k0 and 200 to k1: on ksfo the first request cools k0 and every
# later one skips it while it cools, which is the penalty measured against
# ksok, where no key is cooling. The two alternate in rounds so that a busy
# moment of the machine falls on both; each side's figure is the median of
# its rounds' p50.
fo_rounds=5
measure_failover() {
  local r line ok_p50s=() fo_p50s=()
  start_keyshim ksok
  start_keyshim ksfo
  for ((r = 0; r < fo_rounds; r++)); do
    line=$(lg seq 60 --port "$ksok_port" --path /json --count $((fo_count / fo_rounds)) --warmup-count 20)
    check "$line" keyshim "failover healthy"
    ok_p50s+=("$(kv "$line" lat_p50_us)")
    log "[keyshim] healthy pool, round $r: $line"
    line=$(lg seq 60 --port "$ksfo_port" --path /json-fo --count $((fo_count / fo_rounds)) --warmup-count 20)
    check "$line" keyshim failover
    fo_p50s+=("$(kv "$line" lat_p50_us)")
    log "[keyshim] k0 answers 429, round $r: $line"
  done
  R[fo_ok:keyshim]=$(median "${ok_p50s[@]}")
  R[fo:keyshim]=$(median "${fo_p50s[@]}")
  if ! grep -q 'k0 cooling' "$work/ksfo.log"; then
    note "failover: keyshim did not log k0 cooling; the penalty row may not measure a skipped key"
  fi
  stop_pid "$ksok_pid"
  stop_pid "$ksfo_pid"
}
table_failover() {
  header "failover penalty: latency p50 through keyshim, median of $fo_rounds rounds, µs (target: ≤ +50 µs)"
  row "healthy pool (/json)" "" "$(val fo_ok keyshim)" "" ""
  row "k0 answers 429, cooling (/json-fo)" "" "$(val fo keyshim)" "" ""
  row "penalty" "" "$(minus "$(val fo keyshim)" "$(val fo_ok keyshim)")" "" ""
}

# ------------------------------------------------------------ held streams
# measure_held PREFIX COUNT TIMEOUT: N streams opened at once; with PREFIX
# h1k also the peak RSS.
measure_held() {
  local key=$1 n=$2 bound=$3 t pids p line peak hwm
  for t in "${targets[@]}"; do
    pids=$(pids_of "$t")
    # Root may reset the peak (VmHWM) so that it covers this phase only.
    for p in ${pids//,/ }; do echo 5 >"/proc/$p/clear_refs" 2>/dev/null || true; done
    line=$(lg held "$bound" $(conn_of "$t") --streams "$n" --hold-ms "$hold_ms" --pids "$pids")
    check "$line" "$t" "held $n"
    R[${key}_done:$t]=$(kv "$line" completed)
    R[${key}_time:$t]=$(kv "$line" all_first_byte_s)
    R[${key}_max:$t]=$(kv "$line" first_byte_max_s)
    if [[ -n $pids ]]; then
      peak=$(kv "$line" rss_peak_kb)
      hwm=$(kv "$line" hwm_kb)
      R[${key}_rss:$t]=$(mib "$(awk -v a="${peak:-0}" -v b="${hwm:-0}" 'BEGIN { print (a > b ? a : b) }')")
      if [[ $t == nginx ]]; then
        R[${key}_rss_worker:$t]=$(mib "$(kv "$line" rss_peak_each_kb | cut -d, -f2)")
      fi
    fi
    log "[$t] held $n: $line"
    settle "$t"
  done
}
# The proxy needs two descriptors per stream, the load driver and the mock one.
measure_held_big() {
  if ((nofile >= 2 * held_big + 200)); then
    measure_held h10k "$held_big" "$held_big_timeout"
  else
    note "$held_big held streams skipped: the open-file limit is $nofile and a proxy needs $((2 * held_big + 200)); raise the hard limit (ulimit -Hn, needs CAP_SYS_RESOURCE) or run a smaller count with --held-big $(((nofile - 200) / 2 / 100 * 100))"
  fi
}
# table_held COUNT PREFIX: the table of one held-streams phase (h1k, h10k).
table_held() {
  header "$1 held streams (target: all; time ≤ 2 × direct)"
  row3 "completed" "$2_done" no
  row3 "s until every stream had a byte" "$2_time"
  row3 "s to the last first byte seen" "$2_max" no
  row "time / direct" "" "$(ratio "$(val "$2_time" keyshim)" "$(val "$2_time" direct)")" \
    "$(ratio "$(val "$2_time" nginx)" "$(val "$2_time" direct)")" ""
}
table_memory() {
  header "memory (VmRSS, nginx: master + worker) and threads (target: peak ≤ nginx's; idle ≤ 6 MiB, ≤ 3 threads)"
  row3 "peak RSS at $held_small held, MiB" h1k_rss
  row "  nginx: the worker alone" "" "" "$(val h1k_rss_worker nginx)" "$(ratio "$(val h1k_rss keyshim)" "$(val h1k_rss_worker nginx)")"
  row3 "idle RSS, MiB" idle_rss
  row "  nginx: the worker alone" "" "" "$(val idle_rss_worker nginx)" "$(ratio "$(val idle_rss keyshim)" "$(val idle_rss_worker nginx)")"
  row3 "idle threads (nginx: processes)" idle_threads
}

# ------------------------------------------------------------ silent connections
measure_silent() {
  local t line
  for t in "${targets[@]}"; do
    line=$(lg silent "$silent_timeout" $(conn_of "$t") --silent "$silent_count" --path /json --baseline 5)
    check "$line" "$t" silent
    R[silent_base:$t]=$(ms "$(kv "$line" baseline_p50_us)")
    R[silent_with:$t]=$(ms "$(kv "$line" with_silent_us)")
    R[silent_with50:$t]=$(ms "$(kv "$line" with_silent_p50_us)")
    log "[$t] silent $silent_count: $line"
    settle "$t"
  done
}
table_silent() {
  header "$silent_count silent connections, then one request on a fresh connection, ms (target: ≤ 10 ms more)"
  row3 "without them (median of 5)" silent_base no
  row3 "with them: the first request" silent_with no
  row3 "with them: median of 5" silent_with50 no
  row "added (first request)" "$(minus "$(val silent_with direct)" "$(val silent_base direct)")" \
    "$(minus "$(val silent_with keyshim)" "$(val silent_base keyshim)")" \
    "$(minus "$(val silent_with nginx)" "$(val silent_base nginx)")" ""
}
