#include <gtest/gtest.h>

#include <vector>

#include "ribbon/filter.hpp"

TEST(Smoke, BuildsAndFindsEveryKey) {
  std::vector<std::uint64_t> keys(100000);
  for (std::uint64_t i = 0; i < keys.size(); ++i) keys[i] = i * 7919;
  ribbon::filter f = ribbon::filter::build(keys.data(), keys.size());
  for (std::uint64_t k : keys) ASSERT_TRUE(f.contains(k)) << k;
}
