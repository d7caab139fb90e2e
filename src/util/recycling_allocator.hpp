#pragma once
// An allocator that keeps the blocks it frees, per thread and per type, for
// the next allocation of the same type: for an object made and dropped once
// per request that is too large for malloc's own per-thread cache (glibc's
// tcache takes blocks up to 1,032 bytes), such as the relay's Exchange,
// whose block then costs neither malloc's bins nor its free-time merging.
// With std::allocate_shared one block holds the object and its control
// block. At most k_kept blocks wait per type and thread; none under
// AddressSanitizer, which must see every block freed to find a use after
// it.
#include <array>
#include <cstddef>
#include <new>

namespace keyshim::util {

template <class T> class RecyclingAllocator {
public:
  using value_type = T;
#if defined(__SANITIZE_ADDRESS__)
  static constexpr std::size_t k_kept = 0;
#else
  static constexpr std::size_t k_kept = 64;
#endif

  RecyclingAllocator() = default;
  template <class U> RecyclingAllocator(const RecyclingAllocator<U>&) noexcept {
  }

  T* allocate(std::size_t n) {
    Kept& kept = kept_blocks();
    if (n == 1 && kept.count != 0) {
      return static_cast<T*>(kept.blocks[--kept.count]);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* block, std::size_t n) noexcept {
    Kept& kept = kept_blocks();
    if (n == 1 && kept.count < k_kept) {
      kept.blocks[kept.count++] = block;
      return;
    }
    ::operator delete(block);
  }

  template <class U> bool operator==(const RecyclingAllocator<U>&) const noexcept {
    return true;
  }

private:
  struct Kept {
    std::array<void*, k_kept + 1> blocks{};
    std::size_t count = 0;
    ~Kept() {
      for (std::size_t i = 0; i < count; ++i) {
        ::operator delete(blocks[i]);
      }
    }
  };
  static Kept& kept_blocks() {
    thread_local Kept kept;
    return kept;
  }
};

} // namespace keyshim::util
