# Precompiled third-party headers, one set per target. Beast, toml++, gtest
# and cpp-httplib are parsed once per target instead of once per file: most
# of a keyshim file's compile time is those headers, and CI compiles every
# file three times (ci, asan, tsan). Only headers from outside the
# repository go in, so editing a keyshim header never rebuilds a PCH.
# CLI11 is left out: its cost is the code of its inline functions, which a
# PCH does not save, and loading its 128 MB PCH made each cli/ file that
# does not use CLI11 about 3.5 s slower at -O2 (app.cpp: 9.5 s with, 9.8 s
# without; top_table.cpp: 6.8 s with, 3.3 s without).
#
# A file must still include what it uses: the tidy preset turns this off,
# and clang-tidy fails on a file that compiles only thanks to a PCH.
option(KEYSHIM_PCH "Precompile the heavy third-party headers of each target" ON)

set(KEYSHIM_PCH_STD <string> <string_view> <vector> <memory> <optional> <chrono> <functional>
    <fmt/format.h>)
# relay/beast.hpp's includes (<utility> first: Boost 1.74's awaitable.hpp
# needs it and does not include it).
set(KEYSHIM_PCH_BEAST <utility> <boost/asio/io_context.hpp> <boost/asio/ip/tcp.hpp>
    <boost/asio/ssl/context.hpp> <boost/asio/ssl/stream.hpp> <boost/asio/steady_timer.hpp>
    <boost/asio/write.hpp> <boost/beast/core/flat_buffer.hpp> <boost/beast/http/buffer_body.hpp>
    <boost/beast/http/empty_body.hpp> <boost/beast/http/parser.hpp> <boost/beast/http/string_body.hpp>)
set(KEYSHIM_PCH_TOML <toml++/toml.h>)
set(KEYSHIM_PCH_GTEST <gtest/gtest.h>)
set(KEYSHIM_PCH_HTTPLIB <httplib.h>)

# keyshim_pch(target header-set-name...): e.g. keyshim_pch(keyshim_relay STD BEAST).
function(keyshim_pch target)
  if(NOT KEYSHIM_PCH)
    return()
  endif()
  set(headers)
  foreach(set_name IN LISTS ARGN)
    list(APPEND headers ${KEYSHIM_PCH_${set_name}})
  endforeach()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()

# GCC 12 at -O2 warns that std::string's memcpy overflows, over-reads or runs
# out of bounds in some concatenations (known false positives, GCC bugs 105329 and
# 105651). Inside libstdc++ that is silenced as a system header's, but not
# when libstdc++ comes from a PCH. They fire only in test files, whose
# strings ASan checks; the warnings stay on for src/.
function(keyshim_pch_test target)
  keyshim_pch(${target} ${ARGN})
  if(KEYSHIM_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overflow -Wno-stringop-overread)
  endif()
endfunction()
