// The packed copies of a model's weights that the oneDNN engine's replicas share
// (InceptionWeights::packed): each layer in the layouts its oneDNN primitives asked for, and
// the Winograd layers' transformed filters. Private to src/engine/: the engine fills it as it
// builds networks, and weights_file.cpp's packed-weights file loads and saves it.
#pragma once
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vecbench/core/files/checksum.hpp"
#include "vecbench/engine/winograd.hpp"

namespace vecbench {

/// XXH3-64 (hex) of the floats a packed copy is made from: `w`, then `b` if given.
inline std::string floats_xxh3(const float* w, std::size_t nw, const float* b = nullptr, std::size_t nb = 0) {
  Xxh3 h;
  h.update(w, nw * sizeof(float));
  if (b) h.update(b, nb * sizeof(float));
  return h.hex();
}

/// XXH3-64 (hex) of a Winograd filter's bytes as the packed-weights file holds them: its
/// transformed floats, then its bias.
inline std::string filter_xxh3(const winograd::Filter& f) {
  return floats_xxh3(f.u, f.u_floats(), f.bias, static_cast<std::size_t>(f.out_c));
}

/// The tag that opens a scaled (int8 s8) entry's source checksum: the scheme that turns floats and
/// per-channel scales into s8 bytes (oneDNN's reorder with the scales as output scales). A change
/// of that scheme changes the tag, so that bytes made by the one before are never taken.
constexpr char kScaledSchemeTag[] = "s8 = reorder(w, oscale per output channel) v1";

/// floats_xxh3 of a scaled entry's source: the tag, the OIHW floats, then the per-channel scales.
inline std::string scaled_xxh3(const float* w, std::size_t nw, const float* scales, std::size_t ns) {
  Xxh3 h;
  h.update(kScaledSchemeTag, sizeof kScaledSchemeTag - 1);
  h.update(w, nw * sizeof(float));
  h.update(scales, ns * sizeof(float));
  return h.hex();
}

/// Whether the packed-weights file can hold an entry of this layout (weights_file.cpp): f32,
/// bf16 or s8, blocked, no extra flags, every field in range.
bool packable_weights_desc(const dnnl_memory_desc_t& d);

struct PackedWeightCache {
  struct Entry {
    dnnl::memory::desc desc;     ///< the layout a primitive asked for
    std::shared_ptr<void> data;  ///< the packed weights, read-only once written
    /// Packed with per-channel scales (the int8 route's s8 weights, scaled by vecbench's own
    /// arithmetic before oneDNN's reorder rounds them): their src_xxh3 covers the scales too, so
    /// that a change of that arithmetic is never served stale under an unchanged descriptor.
    bool scaled = false;
    /// floats_xxh3 of the OIHW floats it was reordered from (scaled entries: scaled_xxh3, of a
    /// scheme tag, the floats and the per-channel scales), and whether the floats (and scales) a caller asks with were
    /// found to match it (entries read from a file start unverified: one whose source differs, e.g. another input
    /// normalization folded into the first layer, is dropped and packed again).
    std::string src_xxh3;
    bool verified = true;
    /// Read from a file: the XXH3-64 of its bytes as the writer recorded it, checked with the
    /// source's at first use (the file's own checksum covers its header only, so that a start
    /// reads and hashes only the entries it runs); "" for entries packed in this process.
    std::string bytes_xxh3;
    /// The oneDNN memory over `data`, made by the first network that takes the entry and handed
    /// to every later one: making a memory over a padded layout writes its padding (zeros), which
    /// must not happen while another replica's forward reads those bytes. Empty until taken.
    dnnl::memory mem;
  };
  /// A Winograd layer's transformed filter, with the same checksums (of its weights then bias;
  /// of its transformed floats then bias).
  struct WinogradSlot {
    std::shared_ptr<const winograd::Filter> filter;
    std::string src_xxh3;
    bool verified = true;
    std::string bytes_xxh3;
  };
  std::mutex mu;
  std::map<std::string, std::vector<Entry>> layers;  ///< by layer name
  /// Layers run by vecbench's Winograd kernels (engine/winograd.hpp), by layer name.
  std::map<std::string, WinogradSlot> winograd;
  /// The packed-weights file these were read from and are written to ("": none), the weights'
  /// sha256 it must hold, and whether this process packed anything the file lacks (all under mu).
  std::string file, weight_sha256;
  std::string folded_xxh3;  ///< the checksum of the folded floats the packed ones come from
  bool dirty = false;
};

}  // namespace vecbench
