# shellcheck shell=bash
# Sourced by the callgrind scripts: a scratch folder removed at exit with
# every process started into it, a bench_mock_upstream and a one-key pool
# for it, and the nginx configuration that proxies to the same mock the
# same way.
#
#   start_bench_work TAG              # sets work (a new folder) and pids=();
#                                     # at exit: stop_bench_work
#   stop_bench_work                   # stop_bench_processes, removes $work
#   stop_bench_processes              # kills $pids and waits for them
#   start_mock_pool MOCK SECONDS DIR  # sets mock_port; writes DIR/pool.toml;
#                                     # appends the mock's pid to pids. With
#                                     # TLS=1 the mock is HTTPS, its certificate
#                                     # made now in DIR (the pool's ca_file)
#   write_nginx_conf DIR PORT         # writes DIR/nginx.conf: one worker,
#                                     # master_process off, listening on PORT
#   start_proxy_under PORT KEYSHIM TOOL...  # nginx (NGINX=1) or KEYSHIM on
#                                     # PORT under TOOL; sets proxy_pid
# shellcheck source=bench/test_cert.sh
source "$(dirname "${BASH_SOURCE[0]}")/test_cert.sh"

start_bench_work() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/keyshim-$1.XXXXXX")
  export XDG_STATE_HOME="$work/state" # keyshim's state file, not the user's
  pids=()
  trap stop_bench_work EXIT
}

stop_bench_work() {
  stop_bench_processes
  rm -rf "$work"
}

stop_bench_processes() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}

start_mock_pool() {
  local mock=$1 seconds=$2 dir=$3 tls=() base extra=
  if [[ -n ${TLS:-} ]]; then
    make_test_cert "$dir" || exit 1
    mock_cert=$dir/cert.pem
    tls=(--tls "$mock_cert" "$dir/key.pem")
  fi
  "$mock" --max-seconds "$seconds" "${tls[@]}" >"$dir/mock.out" 2>"$dir/mock.err" &
  pids+=("$!")
  for _ in $(seq 1 50); do grep -q '^port=' "$dir/mock.out" 2>/dev/null && break; sleep 0.1; done
  mock_port=$(sed -n 's/^port=//p' "$dir/mock.out")
  base="http://127.0.0.1:$mock_port"
  if [[ -n ${TLS:-} ]]; then
    base="https://localhost:$mock_port"
    extra="ca_file = \"$mock_cert\""
  fi
  (
    umask 077
    printf '[upstream]\nbase_url = "%s"\n%s\nauth = "bearer"\n\n[[keys]]\nlabel = "k0"\nkey = "sk-bench-0"\n' \
      "$base" "$extra" >"$dir/pool.toml"
  )
}

write_nginx_conf() {
  local dir=$1 port=$2
  mkdir -p "$dir/logs"
  cat >"$dir/nginx.conf" <<NGINX
daemon off; master_process off; worker_processes 1; error_log stderr error; pid $dir/nginx.pid;
$( ((EUID == 0)) && echo 'user root;')
events { worker_connections 1024; }
http { access_log off; proxy_buffering off;
  upstream up { server 127.0.0.1:$mock_port; keepalive 64; }
  server { listen 127.0.0.1:$port;
    location / { proxy_pass http${TLS:+s}://up; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_set_header Authorization "Bearer sk-bench-0";
      $([[ -n ${TLS:-} ]] && echo "proxy_ssl_verify on; proxy_ssl_trusted_certificate $mock_cert;
      proxy_ssl_name localhost; proxy_ssl_server_name on; proxy_ssl_session_reuse on;") } } }
NGINX
}

# start_proxy_under PORT KEYSHIM TOOL...: the proxy the callgrind scripts
# count, on 127.0.0.1:PORT under TOOL (valgrind or strace with its options):
# nginx (one worker, master_process off) with NGINX=1, else KEYSHIM on the
# mock pool. Its stderr goes to $work/tool.err; sets proxy_pid.
start_proxy_under() {
  local port=$1 keyshim=$2
  shift 2
  if [[ -n ${NGINX:-} ]]; then
    write_nginx_conf "$work/ng" "$port"
    "$@" nginx -p "$work/ng" -c "$work/ng/nginx.conf" 2>"$work/tool.err" &
  else
    "$@" "$keyshim" serve -c "$work/pool.toml" --listen "127.0.0.1:$port" -q 2>"$work/tool.err" &
  fi
  # shellcheck disable=SC2034 # read by the script that sourced this file
  proxy_pid=$!
}
