# Only Debian 12 packages; nothing is fetched at build time.
find_package(PkgConfig REQUIRED)
# Debian ships cpp-httplib as a compiled library without a CMake config. Its
# Cflags define CPPHTTPLIB_OPENSSL_SUPPORT/ZLIB/BROTLI, which change struct
# layouts: every file including httplib.h must see them, so the imported
# target carries them.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib>=0.11)
find_package(OpenSSL REQUIRED)
find_package(CLI11 REQUIRED)
find_package(tomlplusplus REQUIRED)
# JSON in and out, behind util/json.hpp (header-only; only util/ includes it).
find_package(nlohmann_json 3.11 REQUIRED)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
# The proxy path: Boost.Beast and Asio are header-only in Debian's 1.74
# (libboost-dev); only OpenSSL is linked. Every TU must agree on these
# definitions or the ODR breaks, so the imported target carries them.
find_package(Boost 1.74 REQUIRED)
add_library(keyshim_beast INTERFACE)
target_link_libraries(keyshim_beast INTERFACE Boost::headers OpenSSL::SSL OpenSSL::Crypto Threads::Threads)
target_compile_definitions(keyshim_beast INTERFACE BOOST_BEAST_USE_STD_STRING_VIEW BOOST_ASIO_NO_DEPRECATED
                                                   BOOST_ASIO_NO_TS_EXECUTORS)
# The first-event check reads a decompressed copy of compressed streams.
find_package(ZLIB REQUIRED)
pkg_check_modules(BROTLIDEC REQUIRED IMPORTED_TARGET libbrotlidec)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
# Tests compress their own brotli samples.
pkg_check_modules(BROTLIENC REQUIRED IMPORTED_TARGET libbrotlienc)
# keyshim top draws on the terminal with ncurses (Debian's libncurses-dev),
# its wide build so UTF-8 labels show as characters; CMake's FindCurses
# also finds macOS's. Only cli/ links and includes it.
set(CURSES_NEED_NCURSES TRUE)
set(CURSES_NEED_WIDE TRUE)
find_package(Curses REQUIRED)
add_library(keyshim_curses INTERFACE)
target_include_directories(keyshim_curses SYSTEM INTERFACE ${CURSES_INCLUDE_DIRS})
target_compile_options(keyshim_curses INTERFACE ${CURSES_CFLAGS})
# Functions instead of curses.h's macros: its move(y, x) would rewrite std::move.
target_compile_definitions(keyshim_curses INTERFACE NCURSES_NOMACROS)
target_link_libraries(keyshim_curses INTERFACE ${CURSES_LIBRARIES})
# Socket activation (sd_listen_fds) and readiness (sd_notify) under systemd;
# macOS has launchd's own calls instead.
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
endif()
