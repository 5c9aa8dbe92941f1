/// @file output_file.hpp
/// Atomic writes of filter files: a locked temporary file in the directory of the file that
/// is replaced, flushed, then renamed over it.
#pragma once

#include <string>

#include "ribbon/format.hpp"

namespace ribbon::detail {

/// Writes the file atomically to `path` (a symbolic link is followed: its target is
/// replaced). On failure nothing is left behind and an existing file is intact. Throws
/// ribbon::error naming the path and the cause; check_output_path()'s refusals come first,
/// before anything is written. Dead builds' temporaries in the directory are reclaimed.
void write_file_atomically(const std::string& path, const format::filter_image& image,
                           const format::section_source& external = {});

}  // namespace ribbon::detail
