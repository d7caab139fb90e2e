# Helpers of bench/sidebyside.sh (sourced): processes, loadgen runs, rounds
# and medians, and the table printer. Globals come from sidebyside.sh.
# Command lines are built as words (`lg MODE T $(conn_of t)`): the script
# refuses a temporary directory with blanks in its path.
# shellcheck disable=SC2046

log() { printf '%s\n' "$*" >&2; }
notes=()
note() { notes+=("$*"); log "note: $*"; }

# ------------------------------------------------------------ processes
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

children_of() { cat "/proc/$1/task/$1/children" 2>/dev/null || true; }

# ------------------------------------------------------------ loadgen
# lg MODE TIMEOUT_S ARGS...: one loadgen run, its key=value line on stdout.
lg() {
  local mode=$1 t=$2
  shift 2
  timeout -k 5 "$(awk -v t="$t" 'BEGIN { printf "%d", t + 30 }')" \
    "$loadgen_bin" "$mode" --timeout "$t" "$@" 2>>"$work/loadgen.err" || true
}

# kv LINE KEY: the value of KEY in a key=value line.
kv() { sed -nE "s/(^|.* )$2=([^ ]*).*/\2/p" <<<"$1"; }

# ------------------------------------------------------------ targets
# A target is direct (load driver -> mock), keyshim or nginx; $up says which
# upstream the rows being measured use: plain (the HTTP mock), tls (the
# HTTPS mock) or ws (the WebSocket echo). keyshim has an instance per
# upstream; nginx one server block per upstream (ws: a location).
up=plain

port_of() {
  case $1:$up in
  direct:plain) echo "$mock_port" ;;
  direct:tls) echo "$mock_tls_port" ;;
  direct:ws) echo "$mock_ws_port" ;;
  keyshim:plain) echo "$ks_port" ;;
  keyshim:tls) echo "$kstls_port" ;;
  keyshim:ws) echo "$ksws_port" ;;
  nginx:tls) echo "$ng_tls_port" ;;
  nginx:*) echo "$ng_port" ;;
  esac
}
# The load driver's options to reach a target: its port, and the CA of the
# HTTPS mock when it talks TLS itself (direct on tls). No spaces: $work is
# a mktemp directory.
conn_of() {
  printf -- '--port %s' "$(port_of "$1")"
  [[ $1:$up == direct:tls ]] && printf -- ' --tls-ca %s' "$work/tls/cert.pem"
  return 0
}
# The proxy's processes (nginx: master and worker); none for direct.
pids_of() {
  case $1:$up in
  direct:*) echo "" ;;
  keyshim:plain) echo "$ks_pid" ;;
  keyshim:tls) echo "$kstls_pid" ;;
  keyshim:ws) echo "$ksws_pid" ;;
  nginx:*) echo "$ng_pid,$ng_worker" ;;
  esac
}

declare -A R # R[metric:target] = value
declare -A idle_fds

# Waits until a proxy is back to its idle descriptors after a phase.
settle() {
  local t=$1 pids fds limit end
  pids=$(pids_of "$t")
  [[ -z $pids ]] && { sleep 0.3; return 0; }
  limit=$((${idle_fds[$t]:-0} + 80))
  # nginx keeps up to 64 idle connections per upstream block (plain, TLS)
  # for as long as 60 s; keyshim has an instance per upstream.
  [[ $t == nginx ]] && limit=$((limit + 128))
  end=$((SECONDS + settle_s))
  while ((SECONDS < end)); do
    fds=$(kv "$(lg procinfo 5 --pids "$pids")" fds)
    [[ -n $fds ]] && ((fds <= limit)) && { sleep 0.2; return 0; }
    sleep 0.2
  done
  note "$t still had ${fds:-?} descriptors ${settle_s}s after a phase (idle: ${idle_fds[$t]:-?}); the next phase starts anyway"
}

alive_check() {
  local t p
  for t in "${targets[@]}"; do
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
  local streams got
  streams=$(kv "$line" streams)
  got=$(kv "$line" completed)
  if [[ -n $streams && -n $got && $got != "$streams" ]]; then
    note "$phase/$t: $((streams - got)) of $streams streams had no first event within the phase's bound"
  fi
}

ms() { if [[ $1 =~ ^[0-9.]+$ ]]; then awk -v u="$1" 'BEGIN { printf "%.2f", u / 1000 }'; else echo "$1"; fi; }
# The median of the numbers among the arguments.
median() {
  printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else if (NR) print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
mib() { awk -v k="$1" 'BEGIN { if (k == "") print ""; else printf "%.1f", k / 1024 }'; }

# ------------------------------------------------------------ rounds
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
