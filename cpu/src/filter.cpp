#include "ribbon/filter.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "output_file.hpp"
#include "query_kernels.hpp"
#include "storage.hpp"
#include "temp_files.hpp"

namespace ribbon {

filter::storage::~storage() {
  if (mapping != nullptr) ::munmap(mapping, mapping_bytes);
}

namespace {
std::atomic<detail::row_check> row_check_choice{detail::row_check::fastest};
}  // namespace

detail::row_check detail::kernels::chosen_row_check() {
  return row_check_choice.load(std::memory_order_relaxed);
}

void detail::set_row_check(row_check which) {
  row_check_choice.store(which);
}

detail::planned_queries detail::plan_queries(const filter_ref& f) {
  return kernels::plan(f);
}

filter::filter() : queries_(detail::plan_queries(ref_)) {}
filter::~filter() = default;
filter::filter(filter&&) noexcept = default;
filter& filter::operator=(filter&&) noexcept = default;

filter builder_access::make(const filter_params& params, std::uint64_t key_count,
                            std::vector<format::layer_image> layers,
                            std::vector<aligned_bytes> buffers) {
  filter f;
  f.storage_ = std::make_unique<filter::storage>();
  f.storage_->buffers = std::move(buffers);
  f.layers_ = std::move(layers);
  format::filter_image image{params, key_count, f.layers_};
  f.ref_ = format::make_ref(image);
  f.queries_ = detail::plan_queries(f.ref_);
  return f;
}

filter filter::adopt(const filter_params& params, std::uint64_t key_count,
                     std::vector<format::layer_image> layers,
                     std::shared_ptr<const void> sections) {
  filter f = builder_access::make(params, key_count, std::move(layers), {});
  f.storage_->adopted = std::move(sections);
  return f;
}

format::filter_image filter::image() const {
  return format::filter_image{ref_.params, ref_.key_count, layers_};
}

void filter::adopt_image(const unsigned char* data, std::uint64_t size, const load_options& options,
                         const std::string& source) {
  format::parsed_image parsed = format::parse_image(data, size, options.verify_checksums, source);
  ref_ = parsed.ref;
  queries_ = detail::plan_queries(ref_);
  format_version_ = parsed.header.format_version;
  layers_.clear();
  for (std::uint32_t l = 0; l < ref_.num_layers; ++l) {
    format::layer_image layer;
    layer.geometry = ref_.layers[l].geometry;
    layer.salt = ref_.layers[l].salt;
    layer.input_keys = parsed.layers[l].input_keys;
    layer.bumped_keys = parsed.layers[l].bumped_keys;
    layer.thresholds = ref_.layers[l].thresholds;
    layer.solution = ref_.layers[l].solution;
    layers_.push_back(layer);
  }
}

filter filter::from_bytes(const unsigned char* data, std::uint64_t size,
                          const load_options& options) {
  filter f;
  f.storage_ = std::make_unique<storage>();
  aligned_bytes copy = allocate_aligned(size);
  if (size) std::memcpy(copy.get(), data, size);
  f.adopt_image(copy.get(), size, options, "filter image");
  f.storage_->buffers.push_back(std::move(copy));
  return f;
}

filter filter::load(const std::string& path, const load_options& options) {
  // Non-blocking: opening a FIFO must not wait for a writer (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw error("cannot open " + path + ": " + std::strerror(errno));
  struct fd_closer {
    int fd;
    ~fd_closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) throw error("cannot stat " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) {
    throw error("cannot read " + path + ": it is " + detail::file_type_name(st.st_mode) +
                ", and a filter is a regular file");
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  filter f;
  f.storage_ = std::make_unique<storage>();
  const unsigned char* data = nullptr;
  if (options.use_mmap && size > 0) {
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) throw error("cannot map " + path + ": " + std::strerror(errno));
    f.storage_->mapping = map;
    f.storage_->mapping_bytes = size;
    data = static_cast<const unsigned char*>(map);
  } else {
    aligned_bytes buffer = allocate_aligned(size);
    std::uint64_t done = 0;
    while (done < size) {
      const ssize_t n = ::pread(fd, buffer.get() + done, size - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw error("cannot read " + path + ": " + std::strerror(errno));
      if (n == 0) throw error(path + ": file shrank while being read");
      done += static_cast<std::uint64_t>(n);
    }
    data = buffer.get();
    f.storage_->buffers.push_back(std::move(buffer));
  }
  f.adopt_image(data, size, options, path);
  return f;
}

void filter::save(const std::string& path) const {
  detail::write_file_atomically(path, image());
}

std::vector<unsigned char> filter::serialize() const {
  return format::serialize(image());
}

std::uint64_t filter::size_bytes() const {
  return format::image_bytes(image());
}

double filter::bits_per_key() const {
  return ref_.key_count == 0
             ? 0.0
             : 8.0 * static_cast<double>(size_bytes()) / static_cast<double>(ref_.key_count);
}

void filter::throw_kind_mismatch(key_kind expected) const {
  throw error(std::string("this filter was built from ") +
              (ref_.params.keys == key_kind::u64 ? "64-bit integer" : "byte-string") +
              " keys and cannot be queried with " +
              (expected == key_kind::u64 ? "64-bit integer" : "byte-string") + " keys");
}

void filter::throw_variant_mismatch(bool retrieval) const {
  throw error(retrieval ? "this is a filter: query it with contains(), not lookup()"
                        : "this is a retrieval structure (built with values): query it with "
                          "lookup(), not contains()");
}

}  // namespace ribbon
