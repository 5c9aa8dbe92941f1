/// @file shard_solver.hpp
/// Solving one shard of one layer, the CPU's way, in its stages: banded Gaussian elimination
/// with bucket thresholds (bumping) by shard_eliminator (shard_eliminator.hpp, following the
/// rules of shard_rules.hpp), several shards a thread (shard_interleave.hpp), then
/// back-substitution into interleaved solution blocks (back_substitution.hpp). Shards touch
/// disjoint output words, so any number of them can be solved at once (CPU tasks; GPU tiles
/// run the same rules cooperatively, see tile_solver.hpp). This header gathers the stages.
#pragma once

#include "ribbon/detail/back_substitution.hpp"
#include "ribbon/detail/shard_eliminator.hpp"
#include "ribbon/detail/shard_interleave.hpp"
#include "ribbon/detail/shard_rules.hpp"
