#!/usr/bin/env bash
# tools/check-layers against small fake trees: a clean one passes, and each
# kind of violation is reported at its file and line with exit status 1.
#
# Usage: tests/tools/check_layers_test.sh [CHECK_LAYERS]   (default: tools/check-layers)
set -euo pipefail
check=${1:-"$(dirname "$0")/../../tools/check-layers"}
check=$(cd "$(dirname "${check}")" && pwd)/$(basename "${check}")
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
failed=0

# put FILE LINE...: write a file of the current fake tree.
put() {
  local file=$1
  shift
  mkdir -p "$(dirname "${file}")"
  printf '%s\n' "$@" >"${file}"
}

# A clean tree: util <- config <- pool, policy <- relay, one private header,
# one test suite.
clean_tree() {
  rm -rf "${work}/tree"
  mkdir -p "${work}/tree"
  cd "${work}/tree"
  put src/CMakeLists.txt \
    'keyshim_module(util    fmt::fmt)' \
    'keyshim_module(config  keyshim_util)' \
    'keyshim_module(pool    keyshim_config)' \
    'keyshim_module(policy  keyshim_config  # a comment (with parentheses)' \
    '                       ZLIB::ZLIB)' \
    'keyshim_module(relay   keyshim_pool keyshim_policy)'
  put tests/CMakeLists.txt 'keyshim_test_suite(unit/pool LIBS keyshim_pool)'
  put src/util/u.hpp '#pragma once' '#include <nlohmann/json.hpp>'
  put src/config/c.hpp '#pragma once' '#include "util/u.hpp"' '#include <toml++/toml.h>'
  put src/pool/p.hpp '#pragma once' '#include "config/c.hpp"'
  put src/policy/text.hpp '#pragma once' '// Small helpers of the policy sources' '// (internal header).'
  put src/policy/q.cpp '#include "policy/text.hpp"' '#include "config/c.hpp"'
  put src/relay/r.cpp '#include "pool/p.hpp"' '#include "policy/q.hpp"' '#include <boost/asio.hpp>'
  put tests/unit/pool/p_test.cpp '#include "pool/p.hpp"' '#include "util/u.hpp"' '#include <gtest/gtest.h>'
}

# expect STATUS [LINE]: check-layers on the current tree exits STATUS and,
# when given, prints LINE exactly.
expect() {
  local want_status=$1 want_line=${2:-} what=${3:-}
  local out status=0
  out=$("${check}" . 2>&1) || status=$?
  if [[ ${status} != "${want_status}" ]]; then
    echo "FAIL ${what}: exit ${status}, expected ${want_status}; output:" >&2
    echo "${out}" >&2
    failed=1
  elif [[ -n ${want_line} ]] && ! grep -qxF -- "${want_line}" <<<"${out}"; then
    echo "FAIL ${what}: no line \"${want_line}\" in:" >&2
    echo "${out}" >&2
    failed=1
  else
    echo "ok   ${what}"
  fi
}

clean_tree
expect 0 "" "a clean tree passes"

clean_tree
put src/pool/p.cpp '#include "pool/p.hpp"' '#include "policy/text2.hpp"'
expect 1 'src/pool/p.cpp:2: includes "policy/text2.hpp" (layer pool may not include layer policy)' \
  "siblings do not include each other"

clean_tree
put src/util/u.cpp '#include "util/u.hpp"' '' '  #  include "config/c.hpp"'
expect 1 'src/util/u.cpp:3: includes "config/c.hpp" (layer util may not include layer config)' \
  "no include runs up the graph"

clean_tree
put src/config/c.cpp '#include <boost/asio/io_context.hpp>'
expect 1 'src/config/c.cpp:1: includes <boost/asio/io_context.hpp> (layer config may not include Boost; only relay/ and server/ may)' \
  "a third-party header stays in its layers"

clean_tree
put src/pool/x.cpp '#include <nlohmann/json.hpp>'
expect 1 'src/pool/x.cpp:1: includes <nlohmann/json.hpp> (layer pool may not include nlohmann-json; only util/ may)' \
  "nlohmann-json stays in util"

clean_tree
put src/relay/screen.cpp '#include <curses.h>'
expect 1 'src/relay/screen.cpp:1: includes <curses.h> (layer relay may not include ncurses; only cli/ may)' \
  "ncurses stays in cli"

clean_tree
put tests/unit/pool/q_test.cpp '#include "policy/q.hpp"'
expect 1 'tests/unit/pool/q_test.cpp:1: includes "policy/q.hpp" (test suite unit/pool links util, config, pool; it may not include layer policy)' \
  "a test includes only the layers its suite links"

clean_tree
put tests/unit/pool/text_test.cpp '#include "policy/text.hpp"'
expect 1 'tests/unit/pool/text_test.cpp:1: includes "policy/text.hpp" (a private header of src/policy/; only files in src/policy/ may include it)' \
  "no test includes a private header"

clean_tree
put src/relay/t.cpp '#include "policy/text.hpp"'
expect 1 'src/relay/t.cpp:1: includes "policy/text.hpp" (a private header of src/policy/; only files in src/policy/ may include it)' \
  "a layer above does not include another layer's private header"

clean_tree
put src/extra/e.cpp '#include "util/u.hpp"'
expect 1 'src/extra/e.cpp:1: includes "util/u.hpp" (src/extra/ is no keyshim_module in src/CMakeLists.txt, so its layer is unknown)' \
  "a folder that is not a module is reported"

clean_tree
put src/CMakeLists.txt 'add_library(everything STATIC all.cpp)'
expect 2 "check-layers: found no keyshim_module(...) in src/CMakeLists.txt" \
  "a graph it cannot read is an error, not a pass"

exit "${failed}"
