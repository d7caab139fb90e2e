# The WebSocket rows of issue 18 (sourced by bench/sidebyside.sh): the load
# driver's ws mode (Beast client) through each target to the mock's --ws
# echo (Beast server). A keyshim without issue 18's relay drops `Upgrade`
# and the echo answers the plain GET 426: a refused upgrade fills that
# target's cells with "n/a (handshake failed: STATUS)" and the run goes on.
# shellcheck disable=SC2046 # command lines as words, see common.sh

ws_run() {
  lg ws $((ws_seconds + 30)) $(conn_of "$1") --path /ws --conc "$ws_conc" --size "$ws_size" \
    --seconds "$ws_seconds" --warmup "$ws_warmup" --pids "$(pids_of "$1")"
}

# measure_ws KEY CONC SIZE: keys KEY50, KEY99 (round trip µs), KEYmps
# (messages/s), KEYcpu (proxy CPU µs per message echoed).
measure_ws() {
  local key=$1 t r line status=""
  ws_conc=$2 ws_size=$3
  up=ws
  interleave "$key" ws_run
  agg "$key" "${key}50" rtt_p50_us
  agg "$key" "${key}99" rtt_p99_us
  agg "$key" "${key}mps" msgs_per_s
  agg "$key" "${key}cpu" cpu_us_per_msg proxies
  for t in "${targets[@]}"; do
    for ((r = 0; r < rounds; r++)); do
      line=${L[$key:$t:$r]:-}
      [[ $(kv "$line" handshake_failed) =~ ^[1-9] ]] && status=$(kv "$line" handshake_status)
    done
    if [[ -n $status ]]; then
      local k na="n/a (handshake failed: $status)"
      for k in 50 99 mps cpu; do R[$key$k:$t]=$na; done
      note "websocket $key/$t: the upgrade was refused with $status (a keyshim without issue 18's WebSocket relay drops Upgrade)"
      status=""
    fi
  done
  up=plain
}

table_ws_latency() {
  header "WebSocket round trip, $1 connection, $2-byte text messages, median of $rounds rounds of ${ws_seconds} s, µs (target: added ≤ nginx's)"
  row3 "p50" wsl50 no
  row3 "p99" wsl99 no
  row_added "p50 added over direct" wsl50
}

table_ws_bulk() {
  header "WebSocket bulk, $1 connections each echoing $2-byte text messages, median of $rounds rounds of ${ws_seconds} s (target: CPU per message ≤ 1.2 × nginx)"
  row3 "messages/s (round trips)" wsbmps
  row3 "proxy CPU µs per message" wsbcpu
}
