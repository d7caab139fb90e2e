#pragma once
// What a fuzz target asserts beyond "no crash": a broken promise of the code
// under test prints which one and aborts, which libFuzzer reports as a crash
// and saves the input for.
#include <cstdio>
#include <cstdlib>

#define KEYSHIM_FUZZ_CHECK(condition)                                                                        \
  do {                                                                                                       \
    if (!(condition)) {                                                                                      \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #condition);                \
      std::abort();                                                                                          \
    }                                                                                                        \
  } while (false)
