# shellcheck shell=bash
# Sourced by the callgrind scripts: starts a bench_mock_upstream and writes a
# one-key pool for it into a folder the caller owns and removes.
#
#   start_mock_pool MOCK SECONDS DIR  # sets mock_port; writes DIR/pool.toml;
#                                     # appends the mock's pid to pids
start_mock_pool() {
  local mock=$1 seconds=$2 dir=$3
  "$mock" --max-seconds "$seconds" >"$dir/mock.out" 2>"$dir/mock.err" &
  pids+=("$!")
  for _ in $(seq 1 50); do grep -q '^port=' "$dir/mock.out" 2>/dev/null && break; sleep 0.1; done
  mock_port=$(sed -n 's/^port=//p' "$dir/mock.out")
  (
    umask 077
    printf '[upstream]\nbase_url = "http://127.0.0.1:%s"\nauth = "bearer"\n\n[[keys]]\nlabel = "k0"\nkey = "sk-bench-0"\n' \
      "$mock_port" >"$dir/pool.toml"
  )
}
