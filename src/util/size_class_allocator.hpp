#pragma once
// An allocator for the many small blocks of one request that come and go
// together, such as Beast's header fields (one block per field, a dozen per
// request between the two heads): a freed block waits, per thread, for the
// next allocation of its size class (multiples of k_unit bytes up to
// k_largest), so that a burst of a dozen frees and mallocs costs no trip
// through malloc's bins. Larger blocks go to the heap as usual. At most
// k_kept blocks wait per class and thread; none under AddressSanitizer,
// which must see every block freed to find a use after it.
#include <array>
#include <cstddef>
#include <new>

namespace keyshim::util {

class SizeClassCache {
public:
  static constexpr std::size_t k_unit = 64;
  static constexpr std::size_t k_classes = 8;
  static constexpr std::size_t k_largest = k_unit * k_classes;
#if defined(__SANITIZE_ADDRESS__)
  static constexpr std::size_t k_kept = 0;
#else
  static constexpr std::size_t k_kept = 64;
#endif

  static void* allocate(std::size_t bytes) {
    if (bytes == 0 || bytes > k_largest) {
      return ::operator new(bytes);
    }
    Kept& kept = kept_blocks()[class_of(bytes)];
    if (kept.count != 0) {
      return kept.blocks[--kept.count];
    }
    return ::operator new((class_of(bytes) + 1) * k_unit); // any block of the class fits any request of it
  }
  static void deallocate(void* block, std::size_t bytes) noexcept {
    if (bytes != 0 && bytes <= k_largest) {
      Kept& kept = kept_blocks()[class_of(bytes)];
      if (kept.count < k_kept) {
        kept.blocks[kept.count++] = block;
        return;
      }
    }
    ::operator delete(block);
  }

private:
  static std::size_t class_of(std::size_t bytes) {
    return (bytes - 1) / k_unit;
  }
  struct Kept {
    std::array<void*, k_kept + 1> blocks{};
    std::size_t count = 0;
    Kept() = default;
    Kept(const Kept&) = delete;
    Kept& operator=(const Kept&) = delete;
    ~Kept() {
      for (std::size_t i = 0; i < count; ++i) {
        ::operator delete(blocks[i]);
      }
    }
  };
  static std::array<Kept, k_classes>& kept_blocks() {
    thread_local std::array<Kept, k_classes> kept;
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
