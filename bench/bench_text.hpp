#pragma once
// Text helpers shared by the benchmark's mock upstream and load driver
// (both plain C-style programs with no library, see CMakeLists.txt).
#include <cstddef>
#include <cstring>

// Whether the `len` bytes at `s` start with `prefix` (lower case), ignoring
// ASCII case in `s`.
inline bool iequal_prefix(const char* s, size_t len, const char* prefix) {
  size_t plen = strlen(prefix);
  if (len < plen) {
    return false;
  }
  for (size_t i = 0; i < plen; i++) {
    char a = s[i];
    if (a >= 'A' && a <= 'Z') {
      a = static_cast<char>(a - 'A' + 'a');
    }
    if (a != prefix[i]) {
      return false;
    }
  }
  return true;
}
