#pragma once
// An allocator for the many small blocks of one request that come and go
// together, such as Beast's header fields (one block per field, a dozen per
// request between the two heads): a freed block waits, per thread, for the
// next allocation of its size class (multiples of k_unit bytes up to
// k_largest), so that a burst of a dozen frees and mallocs costs no trip
// through malloc's bins. Larger blocks go to the heap as usual. At most
// k_kept blocks wait per class and thread; none under AddressSanitizer,
// which must see every block freed to find a use after it.
#include "util/kept_blocks.hpp"

#include <array>
#include <cstddef>
#include <new>

namespace keyshim::util {

class SizeClassCache {
public:
  static constexpr std::size_t k_unit = 64;
  static constexpr std::size_t k_classes = 8;
  static constexpr std::size_t k_largest = k_unit * k_classes;
  static constexpr std::size_t k_kept = KeptBlocks<64>::k_limit;

  static void* allocate(std::size_t bytes) {
    if (bytes == 0 || bytes > k_largest) {
      return ::operator new(bytes);
    }
    if (void* block = kept_blocks()[class_of(bytes)].take()) {
      return block;
    }
    return ::operator new((class_of(bytes) + 1) * k_unit); // any block of the class fits any request of it
  }
  static void deallocate(void* block, std::size_t bytes) noexcept {
    if (bytes == 0 || bytes > k_largest || !kept_blocks()[class_of(bytes)].keep(block)) {
      ::operator delete(block);
    }
  }

private:
  static std::size_t class_of(std::size_t bytes) { return (bytes - 1) / k_unit; }
  static std::array<KeptBlocks<64>, k_classes>& kept_blocks() {
    thread_local std::array<KeptBlocks<64>, k_classes> kept;
    return kept;
  }
};

template <class T> class SizeClassAllocator {
public:
  using value_type = T;

  SizeClassAllocator() = default;
  template <class U> SizeClassAllocator(const SizeClassAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) { return static_cast<T*>(SizeClassCache::allocate(n * sizeof(T))); }
  void deallocate(T* block, std::size_t n) noexcept { SizeClassCache::deallocate(block, n * sizeof(T)); }

  template <class U> bool operator==(const SizeClassAllocator<U>&) const noexcept { return true; }
};

} // namespace keyshim::util
