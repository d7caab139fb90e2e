#!/usr/bin/env bash
# keyshim side by side with nginx, on the same mock upstreams, in one run.
#
#   bench/sidebyside.sh [--quick] [--no-nginx] [--held-big N] [--bulk-only | --first-only] [BUILD_DIR]
#   bench/sidebyside.sh [...] --keyshim PATH --mock PATH --loadgen PATH
#
# BUILD_DIR (default: build/release, else build/ci) holds keyshim,
# bench/bench_mock_upstream and bench/bench_loadgen; this script builds
# nothing. Every metric is measured for direct (load driver -> mock), keyshim
# and nginx (when installed) in turn, on a plain-HTTP, an HTTPS and a
# WebSocket mock, and printed as one table per metric with the ratios the
# targets of issues 7, 18 and 19 are stated in. Everything listens on
# ephemeral 127.0.0.1 ports; every phase is bounded in time; everything this
# script starts is stopped by its pid when it exits. See bench/README.md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

quick=0
bulk_only=0
first_only=0
use_nginx=1
held_big=10000
build_dir=""
keyshim_bin=""
mock_bin=""
loadgen_bin=""

usage() {
  sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
}

while (($#)); do
  case $1 in
  --quick) quick=1 ;;
  --no-nginx) use_nginx=0 ;;
  --bulk-only) bulk_only=1 ;;
  --first-only) first_only=1 ;;
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
  rounds=2 ttfb_rounds=3 ttfb_count=250 ev_streams=4 ev_events=150 ev_gap_us=2000
  rps_seconds=1 rps_warmup=0.2 bulk_seconds=1 bulk_warmup=0.2
  fo_count=300 held_timeout=10 held_big_timeout=12 hold_ms=300
  silent_timeout=15 settle_s=10 first_rounds=3 ws_seconds=1 ws_warmup=0.2
else
  rounds=3 ttfb_rounds=9 ttfb_count=700 ev_streams=4 ev_events=300 ev_gap_us=2000
  rps_seconds=2 rps_warmup=0.3 bulk_seconds=2 bulk_warmup=0.3
  fo_count=1000 held_timeout=20 held_big_timeout=30 hold_ms=500
  silent_timeout=40 settle_s=20 first_rounds=5 ws_seconds=2 ws_warmup=0.3
fi
bulk_streams=2 bulk_events=1000000
silent_count=600 held_small=1000 many_conns=1000
ws_lat_conc=1 ws_lat_size=64 ws_bulk_conc=16 ws_bulk_size=1024

# Many streams need many descriptors: the load driver one per stream, a
# proxy two. Children inherit the limit.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
nofile=$(ulimit -n)

work=$(mktemp -d "${TMPDIR:-/tmp}/keyshim-bench.XXXXXX") # mode 0700
export XDG_STATE_HOME="$work/state" # keyshim keeps its state file there, not in the user's
if [[ $work =~ [[:space:]] ]]; then
  rm -rf "$work"
  echo "sidebyside: the temporary directory $work has blanks in its path; set TMPDIR to one without" >&2
  exit 1
fi
# shellcheck source=bench/test_cert.sh
source "$here/test_cert.sh"
# shellcheck source=bench/sidebyside/common.sh
source "$here/sidebyside/common.sh"
# shellcheck source=bench/sidebyside/start.sh
source "$here/sidebyside/start.sh"
# shellcheck source=bench/sidebyside/rows_plain.sh
source "$here/sidebyside/rows_plain.sh"
# shellcheck source=bench/sidebyside/rows_start.sh
source "$here/sidebyside/rows_start.sh"
# shellcheck source=bench/sidebyside/rows_ws.sh
source "$here/sidebyside/rows_ws.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------ start
# Three mocks (plain HTTP, HTTPS with a certificate made now, WebSocket
# echo), a keyshim instance for each, one nginx with a server for each.
make_cert
start_mock mock
start_mock mock_tls --tls "$work/tls/cert.pem" "$work/tls/key.pem"
start_mock mock_ws --ws
write_pool plain "http://127.0.0.1:$mock_port"
write_pool tls "https://localhost:$mock_tls_port" "ca_file = \"$work/tls/cert.pem\""
write_pool ws "http://127.0.0.1:$mock_ws_port"
start_keyshim ks plain
start_keyshim kstls tls
start_keyshim ksws ws

ng_pid="" ng_port="" ng_tls_port="" ng_worker=""
nginx_bin=$(command -v nginx || true)
[[ -z $nginx_bin && -x /usr/sbin/nginx ]] && nginx_bin=/usr/sbin/nginx
if ((use_nginx)) && [[ -n $nginx_bin ]]; then
  start_nginx
elif ((use_nginx)); then
  note "nginx is not installed (apt-get install nginx-light): its column stays empty"
fi

targets=(direct keyshim)
[[ -n $ng_pid ]] && targets+=(nginx)

log "keyshim-bench: mocks :$mock_port, https :$mock_tls_port, ws :$mock_ws_port; keyshim :$ks_port (pid $ks_pid), https :$kstls_port, ws :$ksws_port${ng_pid:+; nginx :$ng_port, https :$ng_tls_port (pids $ng_pid,$ng_worker)}; open files $nofile; $( ((quick)) && echo quick || echo full) run"

# ------------------------------------------------------------ measure
if ((bulk_only)); then
  measure_bulk bulk1k 1024 1
  measure_bulk bulk16k 16384 1
  up=tls
  measure_bulk tls_bulk1k 1024 1
  measure_bulk tls_bulk16k 16384 1
  up=plain
  printf '\nkeyshim side by side, bulk rows only (%s, %s CPUs, %s)\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc)" \
    "$("$keyshim_bin" --version 2>/dev/null | head -1 || echo keyshim)"
  table_bulk bulk1k 1024 1
  table_bulk bulk16k 16384 1
  table_bulk tls_bulk1k 1024 1 ", HTTPS upstream"
  table_bulk tls_bulk16k 16384 1 ", HTTPS upstream"
  printf '\nthe run took %d s\n' "$SECONDS"
  exit 0
fi

if ((first_only)); then
  measure_first ""
  up=tls
  measure_first tls_
  up=plain
  printf '\nkeyshim side by side, first-request rows only (%s, %s CPUs, %s)\n' "$(date -u +%Y-%m-%dT%H:%MZ)" \
    "$(nproc)" "$("$keyshim_bin" --version 2>/dev/null | head -1 || echo keyshim)"
  table_first "" "plain-HTTP upstream"
  table_first tls_ "HTTPS upstream"
  printf '\nthe run took %d s\n' "$SECONDS"
  exit 0
fi

# Plain-HTTP upstream.
measure_idle
measure_ttfb
measure_events
for c in 16 64; do measure_rps "" "$c"; done
measure_rps close 16 1
measure_bulk bulk 4096 0
measure_bulk bulk1k 1024 1
measure_bulk bulk16k 16384 1
measure_failover
measure_held h1k "$held_small" "$held_timeout"
measure_silent
# After the held streams: the allocator keeps what 1000 busy connections
# took, which would count in the peak RSS at 1000 held streams.
measure_rps "" "$many_conns"
measure_held_big
alive_check

# HTTPS upstream: keyshim with ca_file, nginx with proxy_ssl_verify, the
# load driver's direct runs over TLS to the same mock.
up=tls
measure_ttfb tls_
for c in 16 64; do measure_rps tls_ "$c"; done
measure_rps tls_close 16 1
measure_bulk tls_bulk1k 1024 1
measure_bulk tls_bulk16k 16384 1
up=plain

# The first request after a start, plain and HTTPS upstream.
measure_first ""
up=tls
measure_first tls_
up=plain

# WebSocket (issue 18).
measure_ws wsl "$ws_lat_conc" "$ws_lat_size"
measure_ws wsb "$ws_bulk_conc" "$ws_bulk_size"
alive_check

# ------------------------------------------------------------ tables
mode_text=$( ((quick)) && echo "quick" || echo "full")
printf '\nkeyshim side by side (%s run, %s, %s CPUs, %s)\n' "$mode_text" "$(date -u +%Y-%m-%dT%H:%MZ)" \
  "$(nproc)" "$("$keyshim_bin" --version 2>/dev/null | head -1 || echo keyshim)"
[[ -n $ng_pid ]] && printf '%s\n' "$("$nginx_bin" -v 2>&1 | head -1), 1 worker, proxy_buffering off, upstream keepalive 64"

printf '\n== plain-HTTP upstream\n'
table_cpu "" ", keep-alive" 16 64 "$many_conns"
table_cpu close ", client sends Connection: close" 16
table_rps "" ", keep-alive" 16 64 "$many_conns"
table_rps close ", client sends Connection: close" 16
table_bulk bulk 4096 0
table_bulk bulk1k 1024 1
table_bulk bulk16k 16384 1
table_events
table_ttfb
table_held "$held_small" h1k
table_held "$held_big" h10k
table_memory
table_silent
table_failover
table_first "" "plain-HTTP upstream"

printf '\n== HTTPS upstream (keyshim: ca_file; nginx: proxy_ssl_verify, session reuse; direct: TLS to the mock)\n'
table_cpu tls_ ", keep-alive" 16 64
table_cpu tls_close ", client sends Connection: close" 16
table_rps tls_ ", keep-alive" 16 64
table_rps tls_close ", client sends Connection: close" 16
table_bulk tls_bulk1k 1024 1 ", HTTPS upstream"
table_bulk tls_bulk16k 16384 1 ", HTTPS upstream"
table_ttfb tls_ ", HTTPS upstream"
table_first tls_ "HTTPS upstream"

printf '\n== WebSocket (issue 18)\n'
table_ws_latency "$ws_lat_conc" "$ws_lat_size"
table_ws_bulk "$ws_bulk_conc" "$ws_bulk_size"

printf '\nthe run took %d s\n' "$SECONDS"
if ((${#notes[@]})); then
  printf '\nnotes:\n'
  printf '  - %s\n' "${notes[@]}"
fi
