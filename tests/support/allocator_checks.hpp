#pragma once
// Checks shared by the tests of keyshim's recycling allocators.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace keyshim::test {

// `count` blocks of `n` from `allocator`, all freed, then `count` again:
// however many of them came back from the kept ones, none is handed out twice.
template <class Allocator>
void expect_each_block_handed_out_once(Allocator& allocator, std::size_t count, std::size_t n) {
  using Block = typename Allocator::value_type*;
  std::vector<Block> blocks;
  for (std::size_t i = 0; i < count; ++i) {
    blocks.push_back(allocator.allocate(n));
  }
  for (Block block : blocks) {
    allocator.deallocate(block, n);
  }
  std::vector<Block> again;
  for (std::size_t i = 0; i < count; ++i) {
    again.push_back(allocator.allocate(n));
  }
  std::sort(again.begin(), again.end());
  EXPECT_EQ(std::adjacent_find(again.begin(), again.end()), again.end()) << "a block was handed out twice";
  for (Block block : again) {
    allocator.deallocate(block, n);
  }
}

} // namespace keyshim::test
