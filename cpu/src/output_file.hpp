/// @file output_file.hpp
/// The files the builders write and read back: the one atomic writer (a locked temporary
/// file in the directory of the file that is replaced, written, flushed, renamed over it),
/// and whole reads and writes of a descriptor, retried past short transfers and signals.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ribbon/format.hpp"

namespace ribbon::detail {

/// Writes a file atomically to `path` (a symbolic link is followed: its target is
/// replaced): write(sink) produces the file's bytes through sink. The file is complete
/// under its name, flushed to disk (and its directory entry too, where the directory can be
/// synced), or not there at all: on failure nothing is left behind and an existing file is
/// intact. Throws ribbon::error naming the path and the cause; check_output_path()'s
/// refusals come first, before anything is written. Dead builds' temporaries in the
/// directory are reclaimed.
void write_atomically(const std::string& path,
                      const std::function<void(const format::byte_sink&)>& write);

/// write_atomically() of a filter image (`external`: the sections not held in memory).
void write_file_atomically(const std::string& path, const format::filter_image& image,
                           const format::section_source& external = {});

/// Writes all `bytes` to `fd` at `offset` (the end of what was written so far, for files
/// written in order). Throws "cannot write <path>: <cause>".
void write_fully(int fd, const void* data, std::uint64_t bytes, std::uint64_t offset,
                 const std::string& path);

/// Reads exactly `bytes` at `offset` (which must exist: a short file reads as EIO). Throws
/// "cannot read <what>: <cause>".
void read_fully(int fd, void* data, std::uint64_t bytes, std::uint64_t offset,
                const std::string& what);

/// Passes bytes [offset, offset + bytes) of `fd` to sink, in pieces the size of `buffer`;
/// after each piece, progress(bytes passed so far) if given.
void stream_file(int fd, std::uint64_t offset, std::uint64_t bytes,
                 std::vector<unsigned char>& buffer, const format::byte_sink& sink,
                 const std::string& what,
                 const std::function<void(std::uint64_t)>& progress = nullptr);

}  // namespace ribbon::detail
