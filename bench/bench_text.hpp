#pragma once
// Text helpers shared by the benchmark's mock upstream and load driver
// (both plain C-style programs with no library, see CMakeLists.txt).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

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

// The p-quantile (0..1) of an unsorted sample (sorts it); 0 when empty.
inline uint64_t pct(std::vector<uint64_t>& v, double p) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  size_t idx = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(idx, v.size() - 1)];
}
