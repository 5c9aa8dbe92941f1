#include "ribbon/detail/temp_files.hpp"

#include <unistd.h>

#include <atomic>
#include <cstring>

#include "ribbon/error.hpp"

namespace ribbon::detail {

namespace {

// Paths live in static storage: a signal handler may neither allocate nor lock.
constexpr int slot_count = 4096;
constexpr std::size_t path_capacity = 512;

enum slot_state : int { free_slot = 0, claimed, live_file, live_directory };

struct slot {
  std::atomic<int> state{free_slot};
  char path[path_capacity];
};
slot slots[slot_count];

}  // namespace

temp_path::temp_path(const std::string& path, bool directory) : slot_(-1) {
  if (path.size() >= path_capacity) {
    throw error("temporary path too long (at most " + std::to_string(path_capacity - 1) +
                " bytes): " + path);
  }
  for (int i = 0; i < slot_count; ++i) {
    int expected = free_slot;
    if (slots[i].state.compare_exchange_strong(expected, claimed)) {
      std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
      slots[i].state.store(directory ? live_directory : live_file, std::memory_order_release);
      slot_ = i;
      return;
    }
  }
  throw error("too many temporary files at once");
}

temp_path::~temp_path() {
  slots[slot_].state.store(free_slot, std::memory_order_release);
}

void remove_temp_paths() noexcept {
  for (int pass = 0; pass < 2; ++pass) {  // files first: directories must be empty
    const int wanted = pass == 0 ? live_file : live_directory;
    for (auto& s : slots) {
      if (s.state.load(std::memory_order_acquire) != wanted) continue;
      if (pass == 0) {
        ::unlink(s.path);
      } else {
        ::rmdir(s.path);
      }
    }
  }
}

}  // namespace ribbon::detail
