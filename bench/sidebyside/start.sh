# Starting what bench/sidebyside.sh measures (sourced): the mock upstreams,
# a throw-away certificate, keyshim's pool files and instances, nginx.
# shellcheck disable=SC2091 # *_cmd print a command line, run as words

# start_mock NAME ARGS...: a bench_mock_upstream; sets ${NAME}_port/_pid.
start_mock() {
  local name=$1 port
  shift
  "$mock_bin" --max-seconds 3600 "$@" >"$work/$name.out" 2>"$work/$name.err" &
  printf -v "${name}_pid" '%s' "$!"
  started+=("$!")
  for _ in $(seq 1 50); do
    grep -q '^port=' "$work/$name.out" 2>/dev/null && break
    sleep 0.1
  done
  port=$(sed -n 's/^port=//p' "$work/$name.out")
  [[ -n $port ]] || { log "sidebyside: the mock upstream ($name) did not start: $(cat "$work/$name.err")"; exit 1; }
  printf -v "${name}_port" '%s' "$port"
}

# The HTTPS mock's certificate (bench/test_cert.sh), in a folder of its own.
make_cert() {
  mkdir -m 700 "$work/tls"
  make_test_cert "$work/tls" 2>"$work/tls/why" || { log "sidebyside: $(cat "$work/tls/why")"; exit 1; }
}

# write_pool NAME BASE_URL [EXTRA_UPSTREAM_LINE]: a pool file only this
# user can read, in a 0700 directory.
write_pool() {
  [[ -d $work/pool ]] || mkdir -m 700 "$work/pool"
  (
    umask 077
    cat >"$work/pool/$1.toml" <<TOML
[upstream]
base_url = "$2"
auth = "bearer"
${3:-}

[[keys]]
label = "k0"
key = "sk-bench-0"

[[keys]]
label = "k1"
key = "sk-bench-1"
TOML
  )
}

# keyshim_cmd POOL PORT: the command line of an instance.
keyshim_cmd() { echo "$keyshim_bin serve -c $work/pool/$1.toml --listen 127.0.0.1:$2 -q"; }

# start_keyshim NAME [POOL=plain]: starts an instance; sets ${NAME}_pid and
# ${NAME}_port.
start_keyshim() {
  local name=$1 pool=${2:-plain} port pid
  port=$("$loadgen_bin" freeport)
  $(keyshim_cmd "$pool" "$port") >"$work/$name.log" 2>&1 &
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

# nginx_conf DIR PORT TLS_PORT: nginx as the relay users would pick instead:
# one worker, no buffering, upstream keep-alive; PORT proxies to the HTTP
# mock (and /ws to the WebSocket echo), TLS_PORT to the HTTPS mock, which it
# verifies. (proxy_set_header is repeated per location: a level that sets
# one inherits none.)
nginx_conf() {
  local dir=$1 port=$2 tls_port=$3
  [[ $EUID -eq 0 ]] && echo "user root;"
  cat <<NGINX
worker_processes 1;
worker_rlimit_nofile $nofile;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events {
  worker_connections 32768;
}
http {
  access_log off;
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  client_max_body_size 100m;
  proxy_http_version 1.1;
  proxy_buffering off;
  proxy_read_timeout 1h;
  proxy_send_timeout 1h;
  upstream mock {
    server 127.0.0.1:$mock_port;
    keepalive 64;
    keepalive_requests 1000000;
  }
  upstream mock_tls {
    server 127.0.0.1:$mock_tls_port;
    keepalive 64;
    keepalive_requests 1000000;
  }
  upstream mock_ws {
    server 127.0.0.1:$mock_ws_port;
  }
  server {
    listen 127.0.0.1:$port backlog=4096;
    location / {
      proxy_pass http://mock;
      proxy_set_header Connection "";
      proxy_set_header Authorization "Bearer sk-bench-0";
    }
    location /ws {
      proxy_pass http://mock_ws;
      proxy_set_header Upgrade \$http_upgrade;
      proxy_set_header Connection "upgrade";
      proxy_set_header Authorization "Bearer sk-bench-0";
    }
  }
  server {
    listen 127.0.0.1:$tls_port backlog=4096;
    location / {
      proxy_pass https://mock_tls;
      proxy_set_header Connection "";
      proxy_set_header Authorization "Bearer sk-bench-0";
      proxy_ssl_verify on;
      proxy_ssl_trusted_certificate $work/tls/cert.pem;
      proxy_ssl_name localhost;
      proxy_ssl_server_name on;
      proxy_ssl_session_reuse on;
    }
  }
}
NGINX
}

# nginx_cmd DIR: the command line of an nginx on DIR/nginx.conf.
nginx_cmd() { echo "$nginx_bin -p $1 -c $1/nginx.conf -e $1/error.log"; }

# start_nginx: sets ng_pid, ng_worker, ng_port, ng_tls_port.
start_nginx() {
  local dir=$work/nginx
  ng_port=$("$loadgen_bin" freeport)
  ng_tls_port=$("$loadgen_bin" freeport)
  mkdir -p "$dir"
  nginx_conf "$dir" "$ng_port" "$ng_tls_port" >"$dir/nginx.conf"
  $(nginx_cmd "$dir") >"$dir/out.log" 2>&1 &
  ng_pid=$!
  started+=("$ng_pid")
  if [[ $(lg wait 10 --port "$ng_port") != "ready=1" ]]; then
    log "sidebyside: nginx did not start:"
    cat "$dir/out.log" "$dir/error.log" >&2 2>/dev/null || true
    exit 1
  fi
  for _ in $(seq 1 50); do
    ng_worker=$(children_of "$ng_pid" | awk '{ print $1 }')
    [[ -n $ng_worker ]] && break
    sleep 0.1
  done
  started+=("$ng_worker")
}
