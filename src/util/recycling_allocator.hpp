#pragma once
// An allocator that keeps the blocks it frees, per thread and per type, for
// the next allocation of the same type: for an object made and dropped once
// per request that is too large for malloc's own per-thread cache (glibc's
// tcache takes blocks up to 1,032 bytes), such as the relay's Exchange,
// whose block then costs neither malloc's bins nor its free-time merging.
// With std::allocate_shared one block holds the object and its control
// block. At most k_kept blocks (`Kept`, 64 unless given) wait per type and
// thread; none under AddressSanitizer, which must see every block freed to
// find a use after it.
#include "util/kept_blocks.hpp"

#include <cstddef>
#include <new>

namespace keyshim::util {

template <class T, std::size_t Kept = 64> class RecyclingAllocator {
public:
  using value_type = T;
  template <class U> struct rebind { using other = RecyclingAllocator<U, Kept>; };
  static constexpr std::size_t k_kept = KeptBlocks<Kept>::k_limit;

  RecyclingAllocator() = default;
  template <class U> RecyclingAllocator(const RecyclingAllocator<U, Kept>&) noexcept {}

  T* allocate(std::size_t n) {
    if (void* block = n == 1 ? kept_blocks().take() : nullptr) {
      return static_cast<T*>(block);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* block, std::size_t n) noexcept {
    if (n != 1 || !kept_blocks().keep(block)) {
      ::operator delete(block);
    }
  }

  template <class U> bool operator==(const RecyclingAllocator<U, Kept>&) const noexcept { return true; }

private:
  static KeptBlocks<Kept>& kept_blocks() {
    thread_local KeptBlocks<Kept> kept;
    return kept;
  }
};

} // namespace keyshim::util
