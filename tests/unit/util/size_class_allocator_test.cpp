// SizeClassAllocator: a freed small block is the next one of its size
// class (any size in the class), larger blocks and blocks past the kept
// ones go back to the heap, and Beast's fields work on it as on
// std::allocator.
#include "util/size_class_allocator.hpp"

#include "support/allocator_checks.hpp"

#include <boost/beast/http/fields.hpp>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace keyshim::util {
namespace {

using Cache = SizeClassCache;

TEST(SizeClassAllocator, AFreedBlockServesTheNextRequestOfItsClass) {
  SizeClassAllocator<char> allocator;
  char* first = allocator.allocate(70); // the 65..128-byte class
  std::memset(first, 'x', 70);
  allocator.deallocate(first, 70);
  char* second = allocator.allocate(128); // the class's largest size fits the same block
  if (Cache::k_kept != 0) {
    EXPECT_EQ(second, first);
  } else {
    EXPECT_NE(second, first) << "under AddressSanitizer every block goes back to the heap";
  }
  std::memset(second, 'y', 128);
  allocator.deallocate(second, 128);
}

TEST(SizeClassAllocator, BlocksOfAnotherClassOrPastTheLargestAreNotShared) {
  SizeClassAllocator<char> allocator;
  char* small = allocator.allocate(64);
  allocator.deallocate(small, 64);
  char* other = allocator.allocate(65); // the next class
  EXPECT_NE(other, small);
  char* large = allocator.allocate(Cache::k_largest + 1);
  std::memset(large, 'z', Cache::k_largest + 1);
  allocator.deallocate(large, Cache::k_largest + 1);
  allocator.deallocate(other, 65);
}

TEST(SizeClassAllocator, KeepsAtMostItsLimitAndHandsEachBlockOutOnce) {
  SizeClassAllocator<char> allocator;
  test::expect_each_block_handed_out_once(allocator, Cache::k_kept + 8, 200);
}

TEST(SizeClassAllocator, BeastFieldsKeepTheirValuesAcrossReuse) {
  using Fields = boost::beast::http::basic_fields<SizeClassAllocator<char>>;
  for (int round = 0; round < 3; ++round) {
    Fields fields;
    fields.set(boost::beast::http::field::content_type, "application/json");
    fields.insert("X-Round", std::to_string(round));
    fields.insert("X-Long", std::string(600, 'v')); // past the largest class
    EXPECT_EQ(fields[boost::beast::http::field::content_type], "application/json");
    EXPECT_EQ(fields["X-Round"], std::to_string(round));
    EXPECT_EQ(fields["X-Long"], std::string(600, 'v'));
  }
}

} // namespace
} // namespace keyshim::util
