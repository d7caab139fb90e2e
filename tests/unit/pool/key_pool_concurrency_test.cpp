// The pool across threads: the event loop against the reloader, and the
// pool's own promise that any thread may call it. Run under TSan as well.
#include "pool/key_pool.hpp"

#include "pool_test_support.hpp"
#include "support/fake_clock.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

namespace keyshim::pool {
namespace {

using namespace std::chrono_literals;
using config::Strategy;
using test::make_keys;

constexpr int k_threads = 8;
constexpr int k_acquires_per_thread = 600;

// Runs `body(thread_index)` on k_threads threads, released together.
template <typename Body> void run_threads(Body body) {
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) {
        std::this_thread::yield();
      }
      body(t);
    });
  }
  go = true;
  for (std::thread& thread : threads) {
    thread.join();
  }
}

// What is really concurrent: the event loop selects, reports and releases,
// while the reloader thread reads counts for the status line and builds the
// next pool, whose kept keys share their cells with this one.
TEST(KeyPoolConcurrency, TheLoopSelectsExactlyEvenlyWhileOtherThreadsReadAndReload) {
  test::FakeClock clock;
  KeyPool pool(make_keys({"a", "b", "c", "d"}), Strategy::round_robin, clock);
  constexpr int k_attempts = 4800;
  std::array<int, 4> hits{};
  std::array<std::uint64_t, 4> ok{};
  std::array<std::uint64_t, 4> failed{};
  std::atomic<bool> done{false};
  std::atomic<int> readings{0};
  std::atomic<int> torn{0}; // readings that saw an attempt counted without its outcome
  run_threads([&](int t) {
    if (t == 0) {
      for (int i = 0; i < k_attempts; ++i) {
        Selection selection = pool.acquire({});
        if (!selection.index) {
          ADD_FAILURE() << "no key for attempt " << i;
          break;
        }
        std::size_t k = *selection.index;
        hits[k]++;
        if (i % 3 == 0) {
          pool.report(k, nullptr, test::failure(503, 0ms, "503"));
          failed[k]++;
        } else {
          pool.report(k, nullptr, test::success(200));
          ok[k]++;
        }
        pool.release(k);
      }
      done = true;
      return;
    }
    do {
      std::shared_ptr<KeyPool> next =
          KeyPool::reloaded(pool, make_keys({"a", "b", "c", "d"}), Strategy::round_robin);
      for (const KeySnapshot& key : next->snapshot()) {
        const KeyHealth& health = key.health;
        if (health.total.requests != health.ok_count + health.error_count || health.in_flight > 1) {
          torn++;
        }
      }
      if (pool.counts().available != 4) {
        torn++;
      }
      readings++;
    } while (!done.load());
  });
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GE(readings.load(), k_threads - 1);
  // One selecting thread: round-robin gives exactly 1200 attempts to each key.
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(hits[k], k_attempts / 4) << "key " << k;
    KeyHealth health = pool.health(k);
    EXPECT_EQ(health.in_flight, 0);
    EXPECT_EQ(health.ok_count, ok[k]) << "key " << k;
    EXPECT_EQ(health.error_count, failed[k]) << "key " << k;
    EXPECT_EQ(health.total.requests, static_cast<std::uint64_t>(k_attempts / 4)) << "key " << k;
  }
}

TEST(KeyPoolConcurrency, HeldSelectionsSpreadAcrossKeys) {
  // Callers that all hold their key at once still land on different keys.
  test::FakeClock clock;
  KeyPool pool(make_keys({"a", "b", "c", "d", "e", "f", "g", "h"}), Strategy::round_robin, clock);
  std::vector<std::size_t> chosen(k_threads);
  run_threads([&](int t) { chosen[static_cast<std::size_t>(t)] = *pool.acquire({}).index; });
  for (std::size_t k = 0; k < pool.size(); ++k) {
    EXPECT_EQ(pool.health(k).in_flight, 1) << "key " << k;
  }
}

TEST(KeyPoolConcurrency, MixedReportsKeepCountsConsistent) {
  test::FakeClock clock;
  KeyPool pool(make_keys({"a", "b", "c"}), Strategy::least_recently_used, clock);
  std::atomic<int> acquired{0};
  std::atomic<int> neutral{0};
  run_threads([&](int t) {
    for (int i = 0; i < k_acquires_per_thread; ++i) {
      Selection selection = pool.acquire({});
      if (!selection.index) {
        clock.advance(1s); // every cooldown below is shorter than a few of these
        continue;
      }
      acquired++;
      std::size_t index = *selection.index;
      switch ((t + i) % 4) {
      case 0:
        pool.report(index, nullptr, test::success(200));
        break;
      case 1:
        pool.report(index, nullptr, test::failure(503, 0ms, "503"));
        break;
      case 2:
        pool.report(index, nullptr, test::cool(429, 2s, true, "429"));
        break;
      default:
        pool.report(index, nullptr, test::neutral(404));
        neutral++;
        break;
      }
      (void)pool.snapshot();
      (void)pool.counts();
      pool.release(index);
    }
  });
  std::uint64_t reports = 0;
  std::uint64_t attempts = 0;
  for (std::size_t k = 0; k < pool.size(); ++k) {
    KeyHealth health = pool.health(k);
    EXPECT_EQ(health.in_flight, 0);
    reports += health.ok_count + health.error_count;
    attempts += health.total.requests;
  }
  EXPECT_GT(acquired.load(), 0);
  // Every acquire made one report; all but the neutral ones count as ok or error.
  EXPECT_EQ(attempts, static_cast<std::uint64_t>(acquired.load()));
  EXPECT_EQ(reports, static_cast<std::uint64_t>(acquired.load() - neutral.load()));
}

TEST(KeyPoolConcurrency, ReloadWhileRequestsRunKeepsInFlightBalanced) {
  test::FakeClock clock;
  auto old_pool = std::make_shared<KeyPool>(make_keys({"a", "b"}), Strategy::round_robin, clock);
  std::shared_ptr<KeyPool> new_pool;
  std::atomic<bool> reloaded{false};
  run_threads([&](int t) {
    if (t == 0) {
      new_pool = KeyPool::reloaded(*old_pool, make_keys({"b", "a", "c"}), Strategy::round_robin);
      reloaded = true;
      return;
    }
    for (int i = 0; i < k_acquires_per_thread; ++i) {
      Selection selection = old_pool->acquire({});
      ASSERT_TRUE(selection.index);
      old_pool->release(*selection.index);
    }
  });
  ASSERT_TRUE(reloaded.load());
  for (std::size_t k = 0; k < new_pool->size(); ++k) {
    EXPECT_EQ(new_pool->health(k).in_flight, 0);
  }
}

} // namespace
} // namespace keyshim::pool
