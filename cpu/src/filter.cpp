#include "ribbon/filter.hpp"

#include <atomic>
#include <cstring>

#include "output_file.hpp"
#include "query_kernels.hpp"
#include "storage.hpp"

namespace ribbon {

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

format::filter_image filter::image(format::layout_choice layout) const {
  if (layout == format::layout_choice::automatic) layout = loaded_layout_;
  return format::filter_image{ref_.params,  ref_.key_count, layers_,  layout,
                              group_count_, names_,         metadata_};
}

void filter::adopt_image(const unsigned char* data, std::uint64_t size, const load_options& options,
                         const std::string& source) {
  format::parsed_image parsed = format::parse_image(data, size, options.verify_checksums, source);
  ref_ = parsed.ref;
  queries_ = detail::plan_queries(ref_);
  format_version_ = parsed.header.format_version;
  loaded_layout_ = parsed.features & format::feature_bits::compact
                       ? format::layout_choice::compact
                       : format::layout_choice::standard;
  group_count_ = parsed.header.group_count;
  names_ = parsed.names;
  metadata_ = parsed.metadata;
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
  filter f;
  f.storage_ = std::make_unique<storage>();
  f.storage_->file = file_bytes::open(path, options.use_mmap);
  f.adopt_image(f.storage_->file.data(), f.storage_->file.size(), options, path);
  return f;
}

void filter::save(const std::string& path, format::layout_choice layout) const {
  detail::write_file_atomically(path, image(layout));
}

std::vector<unsigned char> filter::serialize(format::layout_choice layout) const {
  return format::serialize(image(layout));
}

std::uint64_t filter::size_bytes() const {
  return format::image_bytes(image());
}

double filter::bits_per_key() const {
  return ref_.key_count == 0
             ? 0.0
             : 8.0 * static_cast<double>(size_bytes()) / static_cast<double>(ref_.key_count);
}

filter_summary summarize(const filter& f) {
  return summarize(f.image(), f.format_version());
}

const group_names& filter::groups() const {
  if (!is_set()) throw error("this is not a filter set: it has no groups");
  if (!names_) {
    throw error(
        "this filter set has no group names (it was written without them, format version 6): "
        "rebuild it with group names to ask which groups may hold a key");
  }
  return *names_;
}

void filter::set_group_names(group_names names) {
  if (!is_set()) throw error("this is not a filter set: it has no groups to name");
  if (names.kind() != ref_.params.groups) {
    throw error(
        "group names of the wrong kind for this set (" +
        std::string(ref_.params.groups == group_kind::u64 ? "64-bit integers" : "byte strings") +
        ")");
  }
  if (names.size() < group_count_) {
    throw error(std::to_string(names.size()) + " group names for a set of " +
                std::to_string(group_count_) + " groups with keys");
  }
  names_ = std::make_shared<const group_names>(std::move(names));
  format_version_ = 0;
}

void filter::throw_kind_mismatch(key_kind expected) const {
  throw error(std::string("this filter was built from ") +
              (ref_.params.keys == key_kind::u64 ? "64-bit integer" : "byte-string") +
              " keys and cannot be queried with " +
              (expected == key_kind::u64 ? "64-bit integer" : "byte-string") + " keys");
}

void filter::throw_group_mismatch(group_kind expected) const {
  auto named = [](group_kind kind) {
    return kind == group_kind::u64 ? "64-bit integers" : "byte strings";
  };
  if (expected == group_kind::none) {
    throw error("this is a filter set: query it by group and key (contains_in())");
  }
  if (!is_set()) throw error("this is not a filter set: query it with contains() or lookup()");
  throw error(std::string("this filter set names its groups by ") + named(ref_.params.groups) +
              " and cannot be queried with groups named by " + named(expected));
}

void filter::throw_variant_mismatch(bool retrieval) const {
  throw error(retrieval ? "this is a filter: query it with contains(), not lookup()"
                        : "this is a retrieval structure (built with values) without check "
                          "bits: query it with lookup(), not contains()");
}

}  // namespace ribbon
