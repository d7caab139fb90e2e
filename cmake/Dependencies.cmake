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
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
