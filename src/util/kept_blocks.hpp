#pragma once
// Freed blocks kept for reuse, for keyshim's recycling allocators
// (RecyclingAllocator, SizeClassAllocator): a stack of at most Limit blocks,
// none under AddressSanitizer, which must see every block freed to find a
// use after it. Blocks past the limit, and those kept when the stack ends
// (its thread's end), go back to the heap. One thread's stack, never shared.
#include <array>
#include <cstddef>
#include <new>

namespace keyshim::util {

template <std::size_t Limit> class KeptBlocks {
public:
#if defined(__SANITIZE_ADDRESS__)
  static constexpr std::size_t k_limit = 0;
#else
  static constexpr std::size_t k_limit = Limit;
#endif

  KeptBlocks() = default;
  KeptBlocks(const KeptBlocks&) = delete;
  KeptBlocks& operator=(const KeptBlocks&) = delete;
  ~KeptBlocks() {
    for (std::size_t i = 0; i < m_count; ++i) {
      ::operator delete(m_blocks[i]);
    }
  }

  // The block kept last, or null when none is.
  void* take() noexcept {
    return m_count != 0 ? m_blocks[--m_count] : nullptr;
  }
  // Keeps `block` (from ::operator new) unless the stack is full: whether it did.
  bool keep(void* block) noexcept {
    if (m_count == k_limit) {
      return false;
    }
    m_blocks[m_count++] = block;
    return true;
  }

private:
  std::array<void*, k_limit + 1> m_blocks{};
  std::size_t m_count = 0;
};

} // namespace keyshim::util
