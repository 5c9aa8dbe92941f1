// The schedule of the CPU's batched query pipelines (query_kernels.hpp, batched_lanes.hpp).
#pragma once

#include <cstdint>

namespace ribbon::detail::kernels {

/// Runs a three-stage software pipeline over blocks 0 .. num_blocks - 1: each step hashes
/// block b (stage 1, which prefetches what stage 2 reads), locates block b - 1 (stage 2, which
/// prefetches the rows) and answers block b - 2 (stage 3), so that every block's reads have
/// a step's work to arrive. A pipeline keeps its blocks in a ring of three (block b at b % 3).
template <class Hash, class Locate, class Answer>
void run_three_stages(std::uint64_t num_blocks, const Hash& hash_block, const Locate& locate_block,
                      const Answer& answer_block) {
  for (std::uint64_t b = 0; b < num_blocks + 2; ++b) {
    if (b < num_blocks) hash_block(b);
    if (b >= 1 && b <= num_blocks) locate_block(b - 1);
    if (b >= 2) answer_block(b - 2);
  }
}

}  // namespace ribbon::detail::kernels
