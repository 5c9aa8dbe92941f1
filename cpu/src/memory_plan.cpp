// Stage: memory planning (memory_plan.hpp), and the default limit from the machine's or the
// cgroup's memory.
#include "memory_plan.hpp"

#include <unistd.h>

#include <tbb/task_arena.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include "layered_builder.hpp"
#include "ribbon/bulk_builder.hpp"

namespace ribbon {

namespace detail {
namespace {

/// Bytes of one thread's shard-solver workspace (build_workspace.hpp): working arrays of
/// `interleaved_shards` shards (a coefficient word and a result per column), their undo
/// lists, and the sort scratch (a shard's keys: about S, twice for skewed shards).
std::uint64_t solver_workspace_bytes(const filter_params& p) {
  const std::uint64_t columns = p.shard_size + p.width;
  const std::uint64_t result_bytes = p.solver_bits() <= 8 ? 1 : p.solver_bits() <= 16 ? 2 : 4;
  const std::uint64_t undo = 2 * 4 * undo_capacity(p.bucket_size, p.width);
  return interleaved_shards * (columns * (p.width / 8 + result_bytes) + undo) +
         2 * p.shard_size * record_bytes(p);
}

/// The bytes of the carried keys of one boundary shard (a vector that may have doubled).
std::uint64_t carry_bytes(const filter_params& p) {
  return 2 * record_bytes(p) * (p.shard_size + (p.shard_size >> 3));
}

/// A number from a cgroup file, or 0 ("max", missing, unreadable).
std::uint64_t read_limit_file(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text[0] < '0' || text[0] > '9') return 0;
  return std::strtoull(text.c_str(), nullptr, 10);
}

}  // namespace

std::uint64_t memory_plan::partition_buffer_bytes(std::uint64_t files) const {
  return std::clamp<std::uint64_t>(partition_bytes / files, min_partition_buffer_bytes, 4 << 20);
}

memory_plan plan_memory(const filter_params& p, std::uint64_t limit, std::uint32_t threads) {
  memory_plan plan;
  plan.limit = limit;
  const std::uint64_t per_thread = solver_workspace_bytes(p);
  // One thread and the smallest pass, with the I/O buffers (3/64 of the limit) and the
  // partition files' buffers (1/8) on top.
  const std::uint64_t least = per_thread + 3 * min_io_buffer_bytes +
                              min_pass_keys(p) * in_memory_bytes_per_key(p) + carry_bytes(p);
  plan.floor = least * 64 / 53 + 1;
  const std::uint64_t working = std::max(limit, plan.floor);
  const std::uint64_t wanted =
      threads != 0 ? threads : static_cast<std::uint64_t>(tbb::this_task_arena::max_concurrency());
  // Workspaces get at most a third of the limit (at least one thread's): above that, fewer
  // threads solve.
  plan.solver_threads =
      static_cast<std::uint32_t>(std::clamp<std::uint64_t>(working / 3 / per_thread, 1, wanted));
  plan.workspace_bytes = plan.solver_threads * per_thread;
  plan.io_buffer_bytes = std::clamp<std::uint64_t>(working / 64, min_io_buffer_bytes, 4 << 20);
  plan.partition_bytes = working / 8;
  const std::uint64_t fixed =
      plan.workspace_bytes + 3 * plan.io_buffer_bytes + plan.partition_bytes + carry_bytes(p);
  plan.budget = working - fixed;
  plan.spill_budget = limit > fixed ? limit - fixed : 0;
  return plan;
}

std::uint64_t smallest_limit_mib(const filter_params& p, std::uint32_t threads,
                                 const std::function<std::uint64_t(std::uint64_t)>& of_caller,
                                 const std::function<bool(const memory_plan&)>& fits) {
  auto fits_mib = [&](std::uint64_t mib) {
    const std::uint64_t caller = mib << 20;
    return fits(plan_memory(p, of_caller ? of_caller(caller) : caller, threads));
  };
  constexpr std::uint64_t most = std::uint64_t{1} << 40;
  if (!fits_mib(most)) return 0;
  // The budget grows with the limit but for small dips where another solver thread's
  // workspace starts to fit: the limit found fits, and is the smallest one but for a dip.
  std::uint64_t low = 0, high = most;  // fits(high); low does not (or is 0)
  while (high - low > 1) {
    const std::uint64_t mid = low + (high - low) / 2;
    (fits_mib(mid) ? high : low) = mid;
  }
  return high;
}

}  // namespace detail

std::uint64_t default_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  std::uint64_t memory = pages > 0 && page_size > 0 ? static_cast<std::uint64_t>(pages) *
                                                          static_cast<std::uint64_t>(page_size)
                                                    : std::uint64_t{4} << 30;
  for (const char* cgroup :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const std::uint64_t limit = detail::read_limit_file(cgroup);
    if (limit != 0 && limit < memory) memory = limit;
  }
  return memory / 2;
}

}  // namespace ribbon
