// The packed copies of a layer's weights that the replicas share (PackedWeightCache): found,
// verified once when read from the packed-weights file, or packed (private to src/engine/). One
// rule for both kinds of entry, oneDNN's layouts and the Winograd kernels' filters: an entry read
// from the file is used only if its bytes are as written and it was made from the floats the
// caller asks with; otherwise it is packed again and the file is written again.
#pragma once
#include <algorithm>
#include <cassert>
#include <cmath>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "onednn_common.hpp"
#include "packed_weight_cache.hpp"
#include "vecbench/engine/weights_file.hpp"
#include "vecbench/engine/winograd.hpp"

namespace vecbench::onednn_detail {

constexpr const char* corrupted_entry = " does not match its checksum (the file is corrupted): packed again\n";

/// The largest |w| of `n` floats, 0 for none; NaNs ignored. In 16 lanes, so that the compiler
/// vectorizes it (2.7x the one-accumulator loop, the int8 route's per-channel weight scales at
/// each start); exact in any order: a maximum does not round.
inline float abs_max(const float* w, std::size_t n) {
  float lane[16] = {};
  const std::size_t whole = n / 16 * 16;
  for (std::size_t k = 0; k < whole; k += 16)
    for (int j = 0; j < 16; ++j) {
      const float a = std::fabs(w[k + static_cast<std::size_t>(j)]);
      lane[j] = lane[j] < a ? a : lane[j];
    }
  float hi = 0.0f;
  for (const float x : lane) hi = std::max(hi, x);
  for (std::size_t t = whole; t < n; ++t) hi = std::max(hi, std::fabs(w[t]));
  return hi;
}

/// Whether a layout pads a dimension (AMX's bf16 weights pad channels to their blocks).
inline bool padded_layout(const memory::desc& md) {
  for (int i = 0; i < md.data.ndims; ++i)
    if (md.data.padded_dims[i] != md.data.dims[i]) return true;
  return false;
}

/// Whether an entry read from the packed-weights file may be used: its bytes as the writer
/// recorded them (`bytes_intact`; a corrupted one is said on stderr) and made from the floats the
/// caller asks with (`made_from_these`, asked only of intact bytes).
inline bool usable_from_file(const PackedWeightCache& cache, const std::string& name, bool bytes_intact,
                             const std::function<bool()>& made_from_these) {
  if (!bytes_intact) std::cerr << "vecbench: packed weights cache " + cache.file + ": " + name + corrupted_entry;
  return bytes_intact && made_from_these();
}

/// The source checksum a new entry records: only where there is a packed-weights file to check
/// it against later ("" otherwise: nothing is computed).
template <class F>
std::string recorded_source(const PackedWeightCache& cache, const F& source) {
  return cache.file.empty() ? std::string() : std::string(source());
}

/// The weights of layer `name` (OIHW floats `l`) in layout `want`, from the cache; packed into it
/// by the first caller.
/// int8: `out_scale` holds 1 / each output channel's weight scale (the reorder quantizes to s8).
inline memory shared_weights(PackedWeightCache& cache, const std::string& name, const FoldedConv& l,
                             const memory::desc& want, const dnnl::engine& eng,
                             const std::vector<float>* out_scale = nullptr) {
  std::lock_guard<std::mutex> lk(cache.mu);
  auto& entries = cache.layers[name];
  const bool scaled = out_scale != nullptr;
  std::string src;  // the source's checksum, computed once where needed
  const auto source = [&]() -> const std::string& {
    // int8's s8 weights: the floats and the per-channel scales they are packed with, so that
    // bytes packed under other scales (another version of vecbench's arithmetic) are never taken
    if (src.empty())
      src = scaled ? scaled_xxh3(l.weight.data(), l.weight.size(), out_scale->data(), out_scale->size())
                   : floats_xxh3(l.weight.data(), l.weight.size());
    return src;
  };
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (!(it->desc == want) || it->scaled != scaled) continue;
    // An entry is handed to a network (and gets its memory) only once verified, and a verified
    // entry is never erased or its bytes replaced: what a running network reads stays put.
    if (!it->verified) {  // read from a file: made from these floats, and its bytes as written?
      assert(!it->mem);
      const bool intact = it->bytes_xxh3 == xxh3_hex(it->data.get(), want.get_size());
      if (!usable_from_file(cache, name, intact, [&] { return it->src_xxh3 == source(); })) {
        entries.erase(it);  // packed again below, and the file written again
        cache.dirty = true;
        break;
      }
      if (padded_layout(want)) {  // oneDNN zeroes a padded layout's padding: not in the read-only mapping
        auto own = aligned_bytes(want.get_size());
        std::memcpy(own.get(), it->data.get(), want.get_size());
        it->data = std::move(own);
      }
      it->verified = true;
    }
    if (!it->mem) {  // made once (it writes a padded layout's padding), before any network reads it
      it->mem = memory(want, eng, it->data.get());
      ++g_weight_memories;
    }
    return it->mem;
  }
  auto data = aligned_bytes(want.get_size());
  memory packed(want, eng, data.get());
  memory user({{l.shape[0], l.shape[1], l.shape[2], l.shape[3]}, dt::f32, tag::oihw}, eng,
              const_cast<float*>(l.weight.data()));
  dnnl::stream s(eng);
  dnnl::primitive_attr attr;
  if (out_scale) attr.set_output_scales(1, *out_scale);  // per output channel: dim 0 of OIHW
  dnnl::reorder(dnnl::reorder::primitive_desc(user, packed, attr)).execute(s, user, packed);
  s.wait();
  ++g_weight_memories;
  // the checksum is for the packed-weights file only: none without one
  entries.push_back({want, std::move(data), scaled, recorded_source(cache, source), true, {}, packed});
  // a layout the file cannot hold (s8 weights with a compensation) is packed at every start: it
  // must not make every start write the file again
  cache.dirty = cache.dirty || packable_weights_desc(want.data);
  ++g_packs;
  g_packed_bytes += want.get_size();
  return packed;
}

/// Layer `name`'s Winograd filter for `shape` (its transformed weights and bias), from the cache;
/// transformed by the first caller.
inline std::shared_ptr<const winograd::Filter> shared_winograd_filter(PackedWeightCache& cache, const std::string& name,
                                                                      const FoldedConv& l,
                                                                      const winograd::ConvShape& shape) {
  const auto source = [&] { return floats_xxh3(l.weight.data(), l.weight.size(), l.bias.data(), l.bias.size()); };
  std::lock_guard<std::mutex> lk(cache.mu);
  auto& slot = cache.winograd[name];
  const auto* have = slot.filter.get();
  bool fits = have && have->kernel == shape.kernel && have->block == shape.block && have->in_c == shape.in_c &&
              have->out_c == shape.out_c;
  if (fits && !slot.verified)  // read from a file: made from these floats, and its bytes as written?
    fits = slot.verified =
        usable_from_file(cache, name, slot.bytes_xxh3 == filter_xxh3(*have), [&] { return slot.src_xxh3 == source(); });
  if (!fits) {  // made first: a transform that throws (out of memory) leaves no half slot behind
    auto made =
        winograd::make_filter(l.weight.data(), l.bias.data(), shape.out_c, shape.in_c, shape.block, shape.kernel);
    slot = {std::move(made), recorded_source(cache, source), true, {}};
    cache.dirty = true;
    ++g_packs;
    g_packed_bytes += slot.filter->bytes();
  }
  return slot.filter;
}

}  // namespace vecbench::onednn_detail
