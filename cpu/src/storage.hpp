// Memory behind a filter: buffers the builder filled, a heap copy of a file, or a mapping.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ribbon/detail/aligned_memory.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/mapped_file.hpp"

namespace ribbon {

struct filter::storage {
  std::vector<aligned_bytes> buffers;
  std::shared_ptr<const void> adopted;  // sections that filter::adopt() keeps alive
  file_bytes file;                      // a loaded file's bytes
};

/// Lets the builder assemble a filter from the layers it built.
struct builder_access {
  static filter make(const filter_params& params, std::uint64_t key_count,
                     std::vector<format::layer_image> layers, std::vector<aligned_bytes> buffers);
  /// A filter set's distinct groups, which its builder counted.
  static void set_group_count(filter& f, std::uint64_t groups) { f.group_count_ = groups; }
  /// A set's names, which its builder collected (trusted: no count check).
  static void set_group_names(filter& f, std::shared_ptr<const group_names> names) {
    f.names_ = std::move(names);
  }
};

}  // namespace ribbon
