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
#include <array>
#include <cstddef>
#include <new>

namespace keyshim::util {

template <class T, std::size_t Kept = 64> class RecyclingAllocator {
public:
  using value_type = T;
  template <class U> struct rebind { using other = RecyclingAllocator<U, Kept>; };
#if defined(__SANITIZE_ADDRESS__)
  static constexpr std::size_t k_kept = 0;
#else
  static constexpr std::size_t k_kept = Kept;
#endif

  RecyclingAllocator() = default;
  template <class U> RecyclingAllocator(const RecyclingAllocator<U, Kept>&) noexcept {
  }

  T* allocate(std::size_t n) {
    Spare& kept = kept_blocks();
    if (n == 1 && kept.count != 0) {
      return static_cast<T*>(kept.blocks[--kept.count]);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* block, std::size_t n) noexcept {
    Spare& kept = kept_blocks();
    if (n == 1 && kept.count < k_kept) {
      kept.blocks[kept.count++] = block;
      return;
    }
    ::operator delete(block);
  }

  template <class U> bool operator==(const RecyclingAllocator<U, Kept>&) const noexcept {
    return true;
  }

private:
  struct Spare {
    std::array<void*, k_kept + 1> blocks{};
    std::size_t count = 0;
    ~Spare() {
      for (std::size_t i = 0; i < count; ++i) {
        ::operator delete(blocks[i]);
      }
    }
  };
  static Spare& kept_blocks() {
    thread_local Spare kept;
    return kept;
  }
};

} // namespace keyshim::util
