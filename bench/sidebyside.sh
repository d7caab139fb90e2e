#!/usr/bin/env bash
# keyshim side by side with nginx, on one C mock upstream, in one run.
#
#   bench/sidebyside.sh [--quick] [--no-nginx] [--held-big N] [BUILD_DIR]
#   bench/sidebyside.sh [...] --keyshim PATH --mock PATH --loadgen PATH
#
# BUILD_DIR (default: build/release, else build/ci) holds keyshim,
# bench/bench_mock_upstream and bench/bench_loadgen; this script builds
# nothing. Every metric is measured for direct (load driver -> mock), keyshim
# and nginx (when installed) in turn, and printed as one table per metric
# with the ratios the targets of issue 7 are stated in. Everything listens on
# ephemeral 127.0.0.1 ports; every phase is bounded in time; everything this
# script starts is stopped by its pid when it exits. See bench/README.md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

quick=0
use_nginx=1
held_big=10000
build_dir=""
keyshim_bin=""
mock_bin=""
loadgen_bin=""

usage() {
  sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
}

while (($#)); do
  case $1 in
  --quick) quick=1 ;;
  --no-nginx) use_nginx=0 ;;
  --keyshim) keyshim_bin=$2; shift ;;
  --mock) mock_bin=$2; shift ;;
  --loadgen) loadgen_bin=$2; shift ;;
  --held-big) held_big=$2; shift ;;
  -h | --help) usage ;;
  -*) echo "sidebyside: unknown option $1" >&2; usage ;;
  *) build_dir=$1 ;;
  esac
  shift
done

if [[ -z $build_dir ]]; then
  for d in "$root/build/release" "$root/build/ci"; do
    if [[ -x $d/bench/bench_loadgen ]]; then build_dir=$d; break; fi
  done
fi
keyshim_bin=${keyshim_bin:-$build_dir/keyshim}
mock_bin=${mock_bin:-$build_dir/bench/bench_mock_upstream}
loadgen_bin=${loadgen_bin:-$build_dir/bench/bench_loadgen}
for b in "$keyshim_bin" "$mock_bin" "$loadgen_bin"; do
  if [[ ! -x $b ]]; then
    echo "sidebyside: $b is missing; build first:" >&2
    echo "  cmake --preset release -DKEYSHIM_BENCH=ON && cmake --build --preset release" >&2
    exit 1
  fi
done

# ------------------------------------------------------------ parameters
if ((quick)); then
  rounds=2 ttfb_count=500 ev_streams=4 ev_events=150 ev_gap_us=2000
  rps_seconds=1 rps_warmup=0.2 bulk_seconds=1 bulk_warmup=0.2
  fo_count=300 held_timeout=10 held_big_timeout=12 hold_ms=300
  silent_timeout=15 settle_s=10
else
  rounds=3 ttfb_count=2100 ev_streams=4 ev_events=300 ev_gap_us=2000
  rps_seconds=2 rps_warmup=0.3 bulk_seconds=2 bulk_warmup=0.3
  fo_count=1000 held_timeout=20 held_big_timeout=30 hold_ms=500
  silent_timeout=40 settle_s=20
fi
bulk_streams=2 bulk_size=4096 bulk_events=1000000
silent_count=600 held_small=1000

# Many streams need many descriptors: the load driver one per stream, a
# proxy two. Children inherit the limit.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
nofile=$(ulimit -n)

# ------------------------------------------------------------ processes
work=$(mktemp -d "${TMPDIR:-/tmp}/keyshim-bench.XXXXXX") # mode 0700
started=()

stop_pid() {
  local pid=$1
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -TERM "$pid" 2>/dev/null || true # keyshim: a second signal exits at once
  for _ in $(seq 1 30); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
  local i
  for ((i = ${#started[@]} - 1; i >= 0; i--)); do stop_pid "${started[i]}"; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf '%s\n' "$*" >&2; }
notes=()
note() { notes+=("$*"); log "note: $*"; }

# lg MODE TIMEOUT_S ARGS...: one loadgen run, its key=value line on stdout.
lg() {
  local mode=$1 t=$2
  shift 2
  timeout -k 5 "$(awk -v t="$t" 'BEGIN { printf "%d", t + 30 }')" \
    "$loadgen_bin" "$mode" --timeout "$t" "$@" 2>>"$work/loadgen.err" || true
}

# kv LINE KEY: the value of KEY in a key=value line.
kv() { sed -nE "s/(^|.* )$2=([^ ]*).*/\2/p" <<<"$1"; }

children_of() { cat "/proc/$1/task/$1/children" 2>/dev/null || true; }

# Mock upstream.
"$mock_bin" --max-seconds 1800 >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
started+=("$mock_pid")
for _ in $(seq 1 50); do
  grep -q '^port=' "$work/mock.out" 2>/dev/null && break
  sleep 0.1
done
mock_port=$(sed -n 's/^port=//p' "$work/mock.out")
[[ -n $mock_port ]] || { log "sidebyside: the mock upstream did not start: $(cat "$work/mock.err")"; exit 1; }

# keyshim, with a pool file only this user can read.
mkdir -m 700 "$work/pool"
(
  umask 077
  cat >"$work/pool/keys.toml" <<EOF
[upstream]
base_url = "http://127.0.0.1:$mock_port"
auth = "bearer"

[[keys]]
label = "k0"
key = "sk-bench-0"

[[keys]]
label = "k1"
key = "sk-bench-1"
EOF
)

# start_keyshim NAME: starts an instance; sets ${NAME}_pid and ${NAME}_port.
start_keyshim() {
  local name=$1 port pid
  port=$("$loadgen_bin" freeport)
  "$keyshim_bin" serve -c "$work/pool/keys.toml" --listen "127.0.0.1:$port" -q >"$work/$name.log" 2>&1 &
  pid=$!
  started+=("$pid")
  if [[ $(lg wait 10 --port "$port") != "ready=1" ]]; then
    log "sidebyside: keyshim did not start:"
    cat "$work/$name.log" >&2
    exit 1
  fi
  printf -v "${name}_pid" '%s' "$pid"
  printf -v "${name}_port" '%s' "$port"
}
start_keyshim ks

# nginx, as the relay users would pick instead: one worker, no buffering,
# upstream keep-alive.
ng_pid="" ng_port="" ng_worker=""
nginx_bin=$(command -v nginx || true)
[[ -z $nginx_bin && -x /usr/sbin/nginx ]] && nginx_bin=/usr/sbin/nginx
if ((use_nginx)) && [[ -n $nginx_bin ]]; then
  ng_port=$("$loadgen_bin" freeport)
  mkdir -p "$work/nginx"
  {
    [[ $EUID -eq 0 ]] && echo "user root;"
    cat <<EOF
worker_processes 1;
worker_rlimit_nofile $nofile;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events {
  worker_connections 32768;
}
http {
  access_log off;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  client_max_body_size 100m;
  upstream mock {
    server 127.0.0.1:$mock_port;
    keepalive 64;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:$ng_port backlog=4096;
    location / {
      proxy_pass http://mock;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Authorization "Bearer sk-bench-0";
      proxy_buffering off;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
    }
  }
}
EOF
  } >"$work/nginx/nginx.conf"
  "$nginx_bin" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" \
    >"$work/nginx/out.log" 2>&1 &
  ng_pid=$!
  started+=("$ng_pid")
  if [[ $(lg wait 10 --port "$ng_port") != "ready=1" ]]; then
    log "sidebyside: nginx did not start:"
    cat "$work/nginx/out.log" "$work/nginx/error.log" >&2 2>/dev/null || true
    exit 1
  fi
  for _ in $(seq 1 50); do
    ng_worker=$(children_of "$ng_pid" | awk '{ print $1 }')
    [[ -n $ng_worker ]] && break
    sleep 0.1
  done
  started+=("$ng_worker")
elif ((use_nginx)); then
  note "nginx is not installed (apt-get install nginx-light): its column stays empty"
fi

targets=(direct keyshim)
[[ -n $ng_pid ]] && targets+=(nginx)

port_of() {
  case $1 in
  direct) echo "$mock_port" ;;
  keyshim) echo "$ks_port" ;;
  nginx) echo "$ng_port" ;;
  esac
}
# The proxy's processes (nginx: master and worker); none for direct.
pids_of() {
  case $1 in
  direct) echo "" ;;
  keyshim) echo "$ks_pid" ;;
  nginx) echo "$ng_pid,$ng_worker" ;;
  esac
}

declare -A R     # R[metric:target] = value
declare -A idle_fds

# Waits until a proxy is back to its idle descriptors after a phase.
settle() {
  local t=$1 pids fds limit end
  pids=$(pids_of "$t")
  [[ -z $pids ]] && { sleep 0.3; return 0; }
  limit=$((${idle_fds[$t]:-0} + 80))
  end=$((SECONDS + settle_s))
  while ((SECONDS < end)); do
    fds=$(kv "$(lg procinfo 5 --pids "$pids")" fds)
    [[ -n $fds ]] && ((fds <= limit)) && { sleep 0.2; return 0; }
    sleep 0.2
  done
  note "$t still had ${fds:-?} descriptors ${settle_s}s after a phase (idle: ${idle_fds[$t]:-?}); the next phase starts anyway"
}

alive_check() {
  local t
  for t in "${targets[@]}"; do
    local p
    for p in $(pids_of "$t" | tr ',' ' '); do
      kill -0 "$p" 2>/dev/null || { note "$t (pid $p) exited during the run"; }
    done
  done
}

# check LINE TARGET PHASE: notes failures a loadgen line reports.
check() {
  local line=$1 t=$2 phase=$3 k v
  if [[ -z $line ]]; then
    note "$phase/$t: no result (loadgen failed or timed out; see its stderr above)"
    return
  fi
  for k in bad errors failed connect_failures; do
    v=$(kv "$line" $k)
    if [[ -n $v && $v != 0 ]]; then note "$phase/$t: $k=$v"; fi
  done
  v=$(kv "$line" complete)
  if [[ $v == 0 ]]; then note "$phase/$t: did not finish within its time bound"; fi
  local streams done
  streams=$(kv "$line" streams)
  done=$(kv "$line" completed)
  if [[ -n $streams && -n $done && $done != "$streams" ]]; then
    note "$phase/$t: $((streams - done)) of $streams streams had no first event within the phase's bound"
  fi
}

ms() { if [[ $1 =~ ^[0-9.]+$ ]]; then awk -v u="$1" 'BEGIN { printf "%.2f", u / 1000 }'; else echo "$1"; fi; }
# The median of the numbers among the arguments.
median() {
  printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else if (NR) print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
mib() { awk -v k="$1" 'BEGIN { if (k == "") print ""; else printf "%.1f", k / 1024 }'; }

log "keyshim-bench: mock :$mock_port, keyshim :$ks_port (pid $ks_pid)${ng_pid:+, nginx :$ng_port (pids $ng_pid,$ng_worker)}; open files $nofile; $( ((quick)) && echo quick || echo full) run"

# ------------------------------------------------------------ 1. idle
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

# The short metrics run in rounds, the three targets in turn within each
# round, so that a busy moment of the machine falls on all of them; each
# figure is the median of its rounds.
declare -A L # L[phase:target:round] = loadgen line

# interleave PHASE FUNCTION: runs FUNCTION TARGET for every round and target.
interleave() {
  local phase=$1 fn=$2 r t line
  for ((r = 0; r < rounds; r++)); do
    for t in "${targets[@]}"; do
      line=$("$fn" "$t")
      check "$line" "$t" "$phase"
      L[$phase:$t:$r]=$line
      log "[$t] $phase, round $r: $line"
      settle "$t"
    done
  done
}

# agg PHASE KEY FIELD [proxies]: R[KEY:target] = the median of FIELD.
agg() {
  local phase=$1 key=$2 field=$3 t r vals
  for t in "${targets[@]}"; do
    [[ ${4:-} == proxies && $t == direct ]] && continue
    vals=()
    for ((r = 0; r < rounds; r++)); do vals+=("$(kv "${L[$phase:$t:$r]:-}" "$field")"); done
    R[$key:$t]=$(median "${vals[@]}")
  done
}

# ------------------------------------------------------------ 2. TTFB
ttfb_run() { lg seq 60 --port "$(port_of "$1")" --path /json --count $((ttfb_count / rounds)) --warmup-count 50; }
interleave ttfb ttfb_run
agg ttfb ttfb ttfb_p50_us
agg ttfb ttfb99 ttfb_p99_us

# ------------------------------------------------------------ 3. per-event latency
events_run() {
  lg events 60 --port "$(port_of "$1")" --streams "$ev_streams" --events "$ev_events" --gap-us "$ev_gap_us"
}
interleave events events_run
agg events ev50 lat_p50_us
agg events ev99 lat_p99_us

# ------------------------------------------------------------ 4. req/s and CPU
rps_run() {
  lg rps $((rps_seconds + 30)) --port "$(port_of "$1")" --path /json --conc "$conc" \
    --seconds "$rps_seconds" --warmup "$rps_warmup" --pids "$(pids_of "$1")"
}
for conc in 16 64; do
  interleave "rps c=$conc" rps_run
  agg "rps c=$conc" "rps$conc" rps
  agg "rps c=$conc" "cpu$conc" cpu_us_per_req proxies
done

# ------------------------------------------------------------ 5. bulk SSE
bulk_run() {
  lg bulk $((bulk_seconds + 30)) --port "$(port_of "$1")" --streams "$bulk_streams" --size "$bulk_size" \
    --events "$bulk_events" --seconds "$bulk_seconds" --warmup "$bulk_warmup" --pids "$(pids_of "$1")"
}
interleave bulk bulk_run
agg bulk bulk gb_per_s
agg bulk bulkcpu cpu_s_per_gb proxies

# ------------------------------------------------------------ 6. failover
# Two fresh instances on the same pool. /json-fo answers 429 (Retry-After:
# 30) to key k0 and 200 to k1: on ksfo the first request cools k0 and every
# later one skips it while it cools, which is the penalty measured against
# ksok, where no key is cooling. The two alternate in rounds so that a busy
# moment of the machine falls on both; each side's figure is the median of
# its rounds' p50.
start_keyshim ksok
start_keyshim ksfo
fo_rounds=5
ok_p50s=() fo_p50s=()
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

# ------------------------------------------------------------ 7. 1000 held streams, peak RSS
for t in "${targets[@]}"; do
  pids=$(pids_of "$t")
  # Root may reset the peak (VmHWM) so that it covers this phase only.
  for p in ${pids//,/ }; do echo 5 >"/proc/$p/clear_refs" 2>/dev/null || true; done
  line=$(lg held "$held_timeout" --port "$(port_of "$t")" --streams "$held_small" --hold-ms "$hold_ms" --pids "$pids")
  check "$line" "$t" "held $held_small"
  R[h1k_done:$t]=$(kv "$line" completed)
  R[h1k_time:$t]=$(kv "$line" all_first_byte_s)
  R[h1k_max:$t]=$(kv "$line" first_byte_max_s)
  if [[ -n $pids ]]; then
    peak=$(kv "$line" rss_peak_kb)
    hwm=$(kv "$line" hwm_kb)
    R[h1k_rss:$t]=$(mib "$(awk -v a="${peak:-0}" -v b="${hwm:-0}" 'BEGIN { print (a > b ? a : b) }')")
    if [[ $t == nginx ]]; then
      R[h1k_rss_worker:$t]=$(mib "$(kv "$line" rss_peak_each_kb | cut -d, -f2)")
    fi
  fi
  log "[$t] held $held_small: $line"
  settle "$t"
done

# ------------------------------------------------------------ 8. silent connections
for t in "${targets[@]}"; do
  line=$(lg silent "$silent_timeout" --port "$(port_of "$t")" --silent "$silent_count" --path /json --baseline 5)
  check "$line" "$t" silent
  R[silent_base:$t]=$(ms "$(kv "$line" baseline_p50_us)")
  R[silent_with:$t]=$(ms "$(kv "$line" with_silent_us)")
  R[silent_with50:$t]=$(ms "$(kv "$line" with_silent_p50_us)")
  log "[$t] silent $silent_count: $line"
  settle "$t"
done

# ------------------------------------------------------------ 9. 10000 held streams
# The proxy needs two descriptors per stream, the load driver and the mock one.
if ((nofile >= 2 * held_big + 200)); then
  for t in "${targets[@]}"; do
    line=$(lg held "$held_big_timeout" --port "$(port_of "$t")" --streams "$held_big" --hold-ms "$hold_ms" \
      --pids "$(pids_of "$t")")
    check "$line" "$t" "held $held_big"
    R[h10k_done:$t]=$(kv "$line" completed)
    R[h10k_time:$t]=$(kv "$line" all_first_byte_s)
    R[h10k_max:$t]=$(kv "$line" first_byte_max_s)
    log "[$t] held $held_big: $line"
    settle "$t"
  done
else
  note "$held_big held streams skipped: the open-file limit is $nofile and a proxy needs $((2 * held_big + 200)); raise the hard limit (ulimit -Hn, needs CAP_SYS_RESOURCE) or run a smaller count with --held-big $(((nofile - 200) / 2 / 100 * 100))"
fi
alive_check

# ------------------------------------------------------------ tables
val() { local v=${R[$1:$2]:-}; echo "${v:-—}"; }
num() { [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; }
ratio() { if num "$1" && num "$2" && [[ $(awk -v b="$2" 'BEGIN { print (b != 0) }') == 1 ]]; then
  awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; else echo "—"; fi; }
minus() { if num "$1" && num "$2"; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f", a - b }'; else echo "—"; fi; }
over_direct() { minus "$(val "$1" "$2")" "$(val "$1" direct)"; }

header() {
  printf '\n%s\n' "$1"
  printf '  %-34s %12s %12s %12s %14s\n' "" direct keyshim nginx keyshim/nginx
}
row() { printf '  %-34s %12s %12s %12s %14s\n' "$@"; }
# row3 LABEL KEY [RATIO=yes]: the three values of a metric and keyshim/nginx.
row3() {
  local r="—"
  [[ ${3:-yes} == yes ]] && r=$(ratio "$(val "$2" keyshim)" "$(val "$2" nginx)")
  row "$1" "$(val "$2" direct)" "$(val "$2" keyshim)" "$(val "$2" nginx)" "$r"
}
row_added() {
  local k n
  k=$(over_direct "$2" keyshim)
  n=$(over_direct "$2" nginx)
  row "$1" "" "$k" "$n" "$(ratio "$k" "$n")"
}

mode_text=$( ((quick)) && echo "quick" || echo "full")
printf '\nkeyshim side by side (%s run, %s, %s CPUs, %s)\n' "$mode_text" "$(date -u +%Y-%m-%dT%H:%MZ)" \
  "$(nproc)" "$("$keyshim_bin" --version 2>/dev/null | head -1 || echo keyshim)"
[[ -n $ng_pid ]] && printf '%s\n' "$("$nginx_bin" -v 2>&1 | head -1), 1 worker, proxy_buffering off, upstream keepalive 64"

header "CPU µs per non-streaming request, c=16, median of $rounds rounds (proxy's utime+stime / requests; target keyshim ≤ 1.3 × nginx)"
row3 "µs/request" cpu16
header "req/s, non-streaming, keep-alive, median of $rounds rounds of ${rps_seconds} s (target keyshim ≥ 0.85 × nginx)"
row3 "c=16" rps16
row3 "c=64" rps64
row "keyshim / direct" "" "$(ratio "$(val rps16 keyshim)" "$(val rps16 direct)")" \
  "$(ratio "$(val rps16 nginx)" "$(val rps16 direct)")" "(c=16)"
header "bulk SSE, $bulk_streams streams of ${bulk_size}-byte events, median of $rounds rounds of ${bulk_seconds} s (target ≥ 0.85 × nginx GB/s; ≤ 1.3 × nginx CPU-s/GB)"
row3 "GB/s (body bytes)" bulk
row3 "proxy CPU-s per GB" bulkcpu
header "per-event latency, /ts $ev_streams×$ev_events events ${ev_gap_us} µs apart, median of $rounds rounds, µs (target: added ≤ nginx's)"
row3 "p50" ev50 no
row3 "p99" ev99 no
row_added "p50 added over direct" ev50
header "TTFB, keep-alive, one request at a time, median of $rounds rounds, µs (target: added ≤ nginx's)"
row3 "p50" ttfb no
row3 "p99" ttfb99 no
row_added "p50 added over direct" ttfb
# held_table COUNT PREFIX: the table of one held-streams phase (h1k, h10k).
held_table() {
  header "$1 held streams (target: all; time ≤ 2 × direct)"
  row3 "completed" "$2_done" no
  row3 "s until every stream had a byte" "$2_time"
  row3 "s to the last first byte seen" "$2_max" no
  row "time / direct" "" "$(ratio "$(val "$2_time" keyshim)" "$(val "$2_time" direct)")" \
    "$(ratio "$(val "$2_time" nginx)" "$(val "$2_time" direct)")" ""
}
held_table "$held_small" h1k
held_table "$held_big" h10k
header "memory (VmRSS, nginx: master + worker) and threads (target: peak ≤ nginx's; idle ≤ 6 MiB, ≤ 3 threads)"
row3 "peak RSS at $held_small held, MiB" h1k_rss
row "  nginx: the worker alone" "" "" "$(val h1k_rss_worker nginx)" "$(ratio "$(val h1k_rss keyshim)" "$(val h1k_rss_worker nginx)")"
row3 "idle RSS, MiB" idle_rss
row "  nginx: the worker alone" "" "" "$(val idle_rss_worker nginx)" "$(ratio "$(val idle_rss keyshim)" "$(val idle_rss_worker nginx)")"
row3 "idle threads (nginx: processes)" idle_threads
header "$silent_count silent connections, then one request on a fresh connection, ms (target: ≤ 10 ms more)"
row3 "without them (median of 5)" silent_base no
row3 "with them: the first request" silent_with no
row3 "with them: median of 5" silent_with50 no
row "added (first request)" "$(minus "$(val silent_with direct)" "$(val silent_base direct)")" \
  "$(minus "$(val silent_with keyshim)" "$(val silent_base keyshim)")" \
  "$(minus "$(val silent_with nginx)" "$(val silent_base nginx)")" ""
header "failover penalty: latency p50 through keyshim, median of $fo_rounds rounds, µs (target: ≤ +50 µs)"
row "healthy pool (/json)" "" "$(val fo_ok keyshim)" "" ""
row "k0 answers 429, cooling (/json-fo)" "" "$(val fo keyshim)" "" ""
row "penalty" "" "$(minus "$(val fo keyshim)" "$(val fo_ok keyshim)")" "" ""

printf '\nthe run took %d s\n' "$SECONDS"
if ((${#notes[@]})); then
  printf '\nnotes:\n'
  printf '  - %s\n' "${notes[@]}"
fi
