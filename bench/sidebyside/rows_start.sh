# The first request after a start (sourced by bench/sidebyside.sh): the load
# driver starts a fresh process on a fresh port, asks it every 0.2 ms until
# one request is answered 200, then stops it (bench_loadgen first). Direct
# is a fresh mock. For the upstream $up: plain or tls.
# shellcheck disable=SC2046,SC2086 # command lines as words, see common.sh

# first_cmd TARGET PORT: the command line of a fresh TARGET on PORT.
first_cmd() {
  local t=$1 port=$2 dir other
  case $t:$up in
  direct:plain) echo "$mock_bin --port $port --max-seconds 60" ;;
  direct:tls) echo "$mock_bin --port $port --max-seconds 60 --tls $work/tls/cert.pem $work/tls/key.pem" ;;
  keyshim:*) keyshim_cmd "$up" "$port" ;;
  nginx:*)
    # The same configuration as the long-running nginx (it loads the
    # trusted certificate at start either way); the server measured
    # listens on PORT, the other on a port of its own.
    dir=$work/nginx-first
    rm -rf "$dir" && mkdir -p "$dir"
    other=$("$loadgen_bin" freeport)
    if [[ $up == tls ]]; then nginx_conf "$dir" "$other" "$port"; else nginx_conf "$dir" "$port" "$other"; fi >"$dir/nginx.conf"
    nginx_cmd "$dir"
    ;;
  esac
}

# measure_first PREFIX: keys PREFIXfirst_answer, PREFIXfirst_req,
# PREFIXfirst_second; the median of first_rounds starts, targets in turn.
measure_first() {
  local p=$1 r t port args line
  local -A answer req second
  for ((r = 0; r < first_rounds; r++)); do
    for t in "${targets[@]}"; do
      port=$("$loadgen_bin" freeport)
      args="--port $port"
      [[ $t:$up == direct:tls ]] && args+=" --tls-ca $work/tls/cert.pem"
      line=$(lg first 20 $args --path /json -- $(first_cmd "$t" "$port"))
      check "$line" "$t" "${p}first request"
      log "[$t] ${p}first request, start $r: $line"
      answer[$t]+=" $(kv "$line" first_answer_ms)"
      req[$t]+=" $(kv "$line" first_request_ms)"
      second[$t]+=" $(kv "$line" second_request_ms)"
    done
  done
  for t in "${targets[@]}"; do
    # shellcheck disable=SC2086 # the lists are space-separated numbers
    R[${p}first_answer:$t]=$(median ${answer[$t]})
    # shellcheck disable=SC2086
    R[${p}first_req:$t]=$(median ${req[$t]})
    # shellcheck disable=SC2086
    R[${p}first_second:$t]=$(median ${second[$t]})
  done
}

table_first() {
  local p=$1 what=$2
  header "first request after a start, $what, median of $first_rounds starts, ms (target: keyshim ≤ nginx + 1 ms)"
  row3 "start → first answer" "${p}first_answer"
  row3 "that request (connect → last byte)" "${p}first_req"
  row3 "the second request" "${p}first_second" no
  row "first answer: keyshim − nginx" "" "$(minus "$(val "${p}first_answer" keyshim)" "$(val "${p}first_answer" nginx)")" "" ""
}
