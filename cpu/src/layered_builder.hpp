// The oneTBB layer builder shared by the in-memory build (builder.cpp) and the out-of-core
// bulk build (bulk_builder.cpp): hash -> partition by shard -> per shard (sort, eliminate,
// back-substitute) -> gather bumped keys -> next layer; the last layer is plain and retried.
// A header per stage:
//   layered_builder_class.hpp  the class: state, small members, the stages declared
//   build_workspace.hpp        stage clocks, per-thread solver memory, a layer's sections
//                              and their windows, gather_fronts
//   shard_bundle.hpp           up to 3 shards solved on one thread (eliminations
//                              interleaved, back-substitution, outcomes)
//   shard_range_solve.hpp      a shard range solved (sort, then shard bundles);
//                              drop_repeats; solve_shard_range
//   plain_layer.hpp            one try of the plain last layer
//   layer_driver.hpp           the layers in memory, solve_layer, build_many's layer 0,
//                              the arena entry points (build_in_memory)
#pragma once

#include "layer_driver.hpp"  // includes the other stages
