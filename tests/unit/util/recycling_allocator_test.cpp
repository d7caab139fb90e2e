// RecyclingAllocator: a freed block is the next one of its type, a shared
// object made with it lives and dies as with make_shared, and blocks past
// the kept ones go back to the heap.
#include "util/recycling_allocator.hpp"

#include "support/allocator_checks.hpp"

#include <gtest/gtest.h>

#include <array>
#include <memory>

namespace keyshim::util {
namespace {

struct Big {
  std::array<char, 2048> bytes{};
  int* destroyed = nullptr;
  ~Big() {
    if (destroyed) {
      ++*destroyed;
    }
  }
};

TEST(RecyclingAllocator, AFreedBlockIsTheNextOneOfItsType) {
  RecyclingAllocator<Big> allocator;
  Big* first = allocator.allocate(1);
  allocator.deallocate(first, 1);
  Big* second = allocator.allocate(1);
  if (RecyclingAllocator<Big>::k_kept != 0) {
    EXPECT_EQ(second, first);
  } else {
    EXPECT_NE(second, first) << "under AddressSanitizer every block goes back to the heap";
  }
  allocator.deallocate(second, 1);
}

TEST(RecyclingAllocator, ASharedObjectMadeWithItIsDestroyedWithItsLastOwner) {
  int destroyed = 0;
  std::weak_ptr<Big> weak;
  {
    std::shared_ptr<Big> big = std::allocate_shared<Big>(RecyclingAllocator<Big>());
    big->destroyed = &destroyed;
    weak = big;
    std::shared_ptr<Big> again = big;
  }
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(destroyed, 1);
  // The block (object and control block) waits for the next one.
  std::shared_ptr<Big> next = std::allocate_shared<Big>(RecyclingAllocator<Big>());
  EXPECT_EQ(next->destroyed, nullptr) << "a recycled block is constructed afresh";
}

TEST(RecyclingAllocator, KeepsAtMostItsLimitAndHandsEachBlockOutOnce) {
  RecyclingAllocator<Big> allocator;
  test::expect_each_block_handed_out_once(allocator, RecyclingAllocator<Big>::k_kept + 8, 1);
}

TEST(RecyclingAllocator, KeepsNoMoreThanTheLimitItIsGiven) {
  using Two = RecyclingAllocator<Big, 2>;
  Two allocator;
  Big* a = allocator.allocate(1);
  Big* b = allocator.allocate(1);
  Big* c = allocator.allocate(1);
  allocator.deallocate(a, 1);
  allocator.deallocate(b, 1);
  allocator.deallocate(c, 1); // past the limit: back to the heap
  Big* first = allocator.allocate(1);
  Big* second = allocator.allocate(1);
  if (Two::k_kept != 0) {
    EXPECT_EQ(first, b);
    EXPECT_EQ(second, a);
  }
  allocator.deallocate(first, 1);
  allocator.deallocate(second, 1);
}

} // namespace
} // namespace keyshim::util
