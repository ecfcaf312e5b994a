// The oneDNN engine's packed-weights file (include/vecbench/engine/weights_file.hpp): the packed
// copies of a model's layers kept for the next start. No LibTorch here.
#include "vecbench/engine/weights_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>
#include <vector>

#include "onednn_common.hpp"
#include "packed_weight_cache.hpp"
#include "vecbench/core/files/checksum.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/engine/winograd.hpp"
#include "weights_file_io.hpp"

namespace vecbench {
using namespace weights_detail;  // NOLINT: the two files' shared pieces

// The packed-weights file: magic, u64 header length, u64 XXH3-64 of the header, the JSON header
// (padded so that the payload starts at a 64-byte boundary), then the payload, every piece of it
// at a 64-byte boundary and in the header's order: each oneDNN entry's memory descriptor (its raw
// dnnl_memory_desc_t) and packed bytes, each Winograd filter's transformed floats and bias (as
// winograd::make_filter lays them out). Each entry's "xxh3" is the checksum of its bytes (a
// Winograd filter's: floats then bias), checked when a network first takes it; a oneDNN entry's
// "desc_xxh3", of its descriptor, is checked when the file is read (the reader reads those whole
// to match entries to primitives). A start maps the file without reading it and reads and hashes
// only the entries it runs (fp32 does not touch bf16's). Version 3; version 2 (one checksum over header and payload,
// read and hashed whole at every start) and version 1 (f0ca311 only, int8's scaled weights) are not read: packed again.
// int8's s8 weights ("scaled": true) are kept since 2026-12-04 with a "src_xxh3" of their floats
// and their per-channel scales; a reader before that refuses a file holding them (an s8
// descriptor) and packs again.

namespace {

constexpr char kPackedMagic[8] = {'V', 'B', 'P', 'A', 'C', 'K', 'D', '3'};
constexpr std::size_t kPackedPrefix = sizeof kPackedMagic + 2 * sizeof(std::uint64_t);

std::string onednn_version() {
  const auto* v = dnnl::version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}
std::string onednn_isa() { return std::to_string(onednn_detail::effective_isa()); }

std::size_t aligned_up(std::size_t n) { return (n + kPayloadAlign - 1) / kPayloadAlign * kPayloadAlign; }

/// XXH3-64 of the filters this build's make_filter makes from fixed pseudo-random weights (full
/// mantissas), for every kernel and `block`: a file whose filters another transform or layout
/// made (an older or newer vecbench) differs. Two input blocks and two panels, so that a change
/// in how either is laid out shows too.
std::string winograd_probe(int block) {
  Xxh3 h;
  std::uint32_t state = 12345;
  const auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<std::int32_t>(state)) / 2147483648.0f;
  };
  for (const winograd::Kernel k : winograd::kAllKernels) {
    winograd::ConvShape one;
    one.kernel = k;
    const int in_c = 2 * block, out_c = 4 * block, taps = one.kh() * one.kw();
    std::vector<float> w(static_cast<std::size_t>(in_c * out_c * taps)), b(static_cast<std::size_t>(out_c));
    for (float& x : w) x = next();
    for (float& x : b) x = next();
    const auto f = winograd::make_filter(w.data(), b.data(), out_c, in_c, block, k);
    h.update(winograd::kernel_name(k), std::strlen(winograd::kernel_name(k)));
    h.update(f->u, f->u_floats() * sizeof(float));
    h.update(f->bias, static_cast<std::size_t>(out_c) * sizeof(float));
  }
  return h.hex();
}

/// Whether Winograd `kernel` fits a layer of OIHW `shape` with `in_c` -> `out_c` channels.
bool fits(const std::array<int64_t, 4>& shape, winograd::Kernel kernel, int in_c, int out_c) {
  winograd::ConvShape one;
  one.kernel = kernel;
  return shape[0] == out_c && shape[1] == in_c && shape[2] == one.kh() && shape[3] == one.kw();
}

/// Whether a descriptor is one the packed-weights file holds: f32, bf16 or s8 (int8's scaled
/// weights) in a blocked layout, no extra flags (int8 compensation), every blocking field in
/// range (oneDNN walks them). The
/// writer saves only these, and the reader takes only these. A layout may pad a dimension (AMX's
/// bf16 weights pad channels to their blocks): oneDNN zeroes the padding of a memory made on a
/// handle, so such an entry is copied out of the read-only mapping at first use (shared_weights).
bool plain_weights_desc(const dnnl_memory_desc_t& d) {
  if (d.format_kind != dnnl_blocked ||
      (d.data_type != dnnl_f32 && d.data_type != dnnl_bf16 && d.data_type != dnnl_s8) || d.extra.flags != 0 ||
      d.ndims < 1 || d.ndims > DNNL_MAX_NDIMS || d.offset0 != 0)
    return false;
  const auto& b = d.format_desc.blocking;
  if (b.inner_nblks < 0 || b.inner_nblks > DNNL_MAX_NDIMS) return false;
  for (int i = 0; i < b.inner_nblks; ++i)
    if (b.inner_idxs[i] < 0 || b.inner_idxs[i] >= d.ndims || b.inner_blks[i] <= 0 || b.inner_blks[i] > (1 << 16))
      return false;
  for (int i = 0; i < d.ndims; ++i)
    if (d.dims[i] <= 0 || d.dims[i] > (1 << 16) || d.padded_dims[i] < d.dims[i] || d.padded_dims[i] > (1 << 16) ||
        d.padded_offsets[i] != 0 || b.strides[i] <= 0 || b.strides[i] > (dnnl_dim_t{1} << 40))
      return false;
  return true;
}

/// What a packed-weights file holds: the cache's entries, copied (their bytes shared) under its lock.
struct PackedSnapshot {
  std::map<std::string, std::vector<PackedWeightCache::Entry>> layers;
  std::map<std::string, PackedWeightCache::WinogradSlot> winograd;
  std::string path, sha, folded_xxh3;
};

struct PackedFile {
  std::string header;                                       ///< the JSON header, padded
  std::vector<std::pair<const void*, std::size_t>> pieces;  ///< the payload, in order
  std::size_t payload = 0;
};

/// The file's header and payload pieces for a snapshot.
PackedFile packed_file(const PackedSnapshot& c) {
  PackedFile f;
  static const char zeros[kPayloadAlign] = {};
  const auto add = [&](const void* p, std::size_t n) {
    const std::size_t at = f.payload;
    f.pieces.emplace_back(p, n);
    if (aligned_up(n) > n) f.pieces.emplace_back(zeros, aligned_up(n) - n);
    f.payload += aligned_up(n);
    return at;
  };
  nlohmann::json onednn = nlohmann::json::array(), wino = nlohmann::json::array();
  int block = 0;
  for (const auto& [name, entries] : c.layers)
    for (const auto& e : entries) {
      if (!plain_weights_desc(e.desc.data)) continue;  // e.g. s8 weights with a compensation (extra flags)
      const std::size_t desc_at = add(&e.desc.data, sizeof e.desc.data);
      onednn.push_back({{"name", name},
                        {"scaled", e.scaled},
                        {"desc_at", desc_at},
                        {"desc_xxh3", xxh3_hex(&e.desc.data, sizeof e.desc.data)},  // the bytes written
                        {"at", add(e.data.get(), e.desc.get_size())},
                        {"bytes", e.desc.get_size()},
                        {"src_xxh3", e.src_xxh3},
                        // an entry read from a file and not taken since keeps the checksum it came with
                        {"xxh3", e.bytes_xxh3.empty() ? xxh3_hex(e.data.get(), e.desc.get_size()) : e.bytes_xxh3}});
    }
  for (const auto& [name, slot] : c.winograd) {
    if (!slot.filter) continue;  // a slot whose transform failed (out of memory)
    const winograd::Filter& fl = *slot.filter;
    block = fl.block;
    const std::size_t u_at = add(fl.u, fl.u_floats() * sizeof(float));
    wino.push_back({{"name", name},
                    {"kernel", winograd::kernel_name(fl.kernel)},
                    {"in_c", fl.in_c},
                    {"out_c", fl.out_c},
                    {"block", fl.block},
                    {"u_at", u_at},
                    {"bias_at", add(fl.bias, static_cast<std::size_t>(fl.out_c) * sizeof(float))},
                    {"src_xxh3", slot.src_xxh3},
                    {"xxh3", slot.bytes_xxh3.empty() ? filter_xxh3(fl) : slot.bytes_xxh3}});
  }
  nlohmann::json j = {{"weight_sha256", c.sha},
                      {"folded_xxh3", c.folded_xxh3},
                      {"onednn_version", onednn_version()},
                      {"onednn_hash", dnnl::version()->hash},
                      {"onednn_isa", onednn_isa()},
                      {"desc_bytes", sizeof(dnnl_memory_desc_t)},
                      {"payload_bytes", f.payload},
                      {"onednn", onednn},
                      {"winograd", wino}};
  if (block) j["winograd_block"] = block, j["winograd_probe"] = winograd_probe(block);
  f.header = j.dump();
  f.header.append((kPayloadAlign - (kPackedPrefix + f.header.size()) % kPayloadAlign) % kPayloadAlign, ' ');
  return f;
}

/// Writes a snapshot's file (atomically). Throws on a write that fails.
void write_packed_file(const PackedSnapshot& snap) {
  const PackedFile f = packed_file(snap);
  const std::uint64_t hlen = f.header.size(), sum = XXH3_64bits(f.header.data(), f.header.size());
  std::vector<std::pair<const void*, std::size_t>> pieces{{kPackedMagic, sizeof kPackedMagic},
                                                          {&hlen, sizeof hlen},
                                                          {&sum, sizeof sum},
                                                          {f.header.data(), f.header.size()}};
  pieces.insert(pieces.end(), f.pieces.begin(), f.pieces.end());
  atomic_write(snap.path, pieces);
}

}  // namespace

bool packable_weights_desc(const dnnl_memory_desc_t& d) { return plain_weights_desc(d); }

std::string packed_file_path(const std::string& weights_path) {
  if (weights_path.empty()) return "";
  std::string base = weights_path;
  const std::string ext = ".v2.onednn";
  if (base.size() > ext.size() && base.compare(base.size() - ext.size(), ext.size(), ext) == 0)
    base.resize(base.size() - ext.size());
  return base + ".packed.isa" + onednn_isa() + ".dnnl" + onednn_version() + ".v2.onednn";
}

void save_packed_weights(const InceptionWeights& w) {
  PackedWeightCache& c = *w.packed;
  // one save at a time in a process: an older snapshot's rename never lands after a newer one's
  static std::mutex save_mu;
  std::lock_guard<std::mutex> one(save_mu);
  try {
    PackedSnapshot snap;
    {
      std::lock_guard<std::mutex> lk(c.mu);
      if (c.file.empty() || !c.dirty) return;
      snap.layers = c.layers;  // descriptors and shared bytes: no copy of the weights
      snap.winograd = c.winograd;
      snap.path = c.file;
      snap.sha = c.weight_sha256;
      snap.folded_xxh3 = c.folded_xxh3;
      c.dirty = false;
    }
    write_packed_file(snap);
    prune_weights_cache(fs::path(snap.path).parent_path().string(), snap.path, weights_cache_budget());
  } catch (...) {  // a read-only or full cache, no memory: the next start packs again
  }
}

namespace {

/// The entries of a checked packed-weights file into `c`; false where one does not fit `w`'s
/// layers, is not where the writer puts it, or repeats (nothing added then).
bool read_packed_entries(const nlohmann::json& h, const InceptionWeights& w, const std::shared_ptr<const void>& map,
                         const char* payload, std::size_t payload_bytes, PackedWeightCache& c) {
  std::size_t next = 0;  // where the next piece must start: the writer's order, nothing between
  const auto piece = [&](std::size_t at, std::size_t n) {
    if (at != next || n > payload_bytes - std::min(at, payload_bytes)) return false;
    next = at + aligned_up(n);
    return next <= payload_bytes;
  };
  std::map<std::string, std::vector<PackedWeightCache::Entry>> layers;
  std::map<std::string, PackedWeightCache::WinogradSlot> wino;
  auto shared = std::const_pointer_cast<void>(map);
  for (const auto& e : h.at("onednn")) {
    const auto name = e.at("name").get<std::string>();
    const auto desc_at = e.at("desc_at").get<std::size_t>(), at = e.at("at").get<std::size_t>();
    const auto bytes = e.at("bytes").get<std::size_t>();
    if (!w.convs.count(name) || !piece(desc_at, sizeof(dnnl_memory_desc_t)) || !piece(at, bytes)) return false;
    if (e.at("desc_xxh3").get<std::string>() != xxh3_hex(payload + desc_at, sizeof(dnnl_memory_desc_t)) ||
        e.at("xxh3").get<std::string>().size() != 16)
      return false;  // a descriptor is read here, whole: checked here; the bytes when first taken
    dnnl_memory_desc_t raw;
    std::memcpy(&raw, payload + desc_at, sizeof raw);
    if (!plain_weights_desc(raw)) return false;
    const dnnl::memory::desc desc(raw);
    if (desc.get_size() != bytes) return false;
    const bool scaled = e.value("scaled", false);
    if (scaled != (desc.data_type() == dnnl::memory::data_type::s8)) return false;  // s8 weights are int8's, scaled
    auto& list = layers[name];
    for (const auto& other : list)
      if (other.desc == desc) return false;  // the same layout twice
    list.push_back({desc,
                    std::shared_ptr<void>(shared, const_cast<char*>(payload + at)),
                    scaled,
                    e.at("src_xxh3").get<std::string>(),
                    false,
                    e.at("xxh3").get<std::string>(),
                    {}});
  }
  for (const auto& e : h.at("winograd")) {
    const auto name = e.at("name").get<std::string>(), kname = e.at("kernel").get<std::string>();
    const int in_c = e.at("in_c").get<int>(), out_c = e.at("out_c").get<int>(), block = e.at("block").get<int>();
    const auto u_at = e.at("u_at").get<std::size_t>(), bias_at = e.at("bias_at").get<std::size_t>();
    if (e.at("xxh3").get<std::string>().size() != 16) return false;
    const auto kernel = std::find_if(std::begin(winograd::kAllKernels), std::end(winograd::kAllKernels),
                                     [&](winograd::Kernel k) { return kname == winograd::kernel_name(k); });
    const auto it = w.convs.find(name);
    if (kernel == std::end(winograd::kAllKernels) || it == w.convs.end() ||
        !fits(it->second.shape, *kernel, in_c, out_c) || block != h.value("winograd_block", 0) || in_c <= 0 ||
        out_c <= 0 || in_c > (1 << 16) || out_c > (1 << 16))
      return false;
    const auto npos = static_cast<std::size_t>(winograd::positions(*kernel));
    if (!piece(u_at, npos * static_cast<std::size_t>(in_c) * static_cast<std::size_t>(out_c) * sizeof(float)) ||
        !piece(bias_at, static_cast<std::size_t>(out_c) * sizeof(float)))
      return false;
    auto f = winograd::filter_view(out_c, in_c, block, *kernel, reinterpret_cast<const float*>(payload + u_at),
                                   reinterpret_cast<const float*>(payload + bias_at), map);
    if (!wino.emplace(name, PackedWeightCache::WinogradSlot{std::move(f), e.at("src_xxh3").get<std::string>(), false,
                                                            e.at("xxh3").get<std::string>()})
             .second)
      return false;  // the same layer twice
  }
  if (next != payload_bytes) return false;
  std::lock_guard<std::mutex> lk(c.mu);
  for (auto& [name, entries] : layers)
    for (auto& e : entries) c.layers[name].push_back(std::move(e));
  for (auto& [name, slot] : wino) c.winograd.emplace(name, std::move(slot));
  return true;
}

/// The reason `h` (a packed file's header whose checksum matched) was made for something else
/// than this run ("" when it was made for it).
std::string packed_header_mismatch(const nlohmann::json& h, const std::string& weight_sha256,
                                   const std::string& folded_xxh3) {
  if (h.at("weight_sha256") != weight_sha256) return "made for other weights (sha256)";
  if (h.at("folded_xxh3") != folded_xxh3) return "made from other folded weights";
  if (h.at("onednn_version") != onednn_version() || h.at("onednn_hash") != std::string(dnnl::version()->hash) ||
      h.at("desc_bytes").get<std::size_t>() != sizeof(dnnl_memory_desc_t))
    return "made by another oneDNN build";
  if (h.at("onednn_isa") != onednn_isa()) return "made for another ISA";
  const int block = h.value("winograd_block", 0);
  if (block && h.value("winograd_probe", std::string()) != winograd_probe(block))
    return "made by another Winograd transform";
  return "";
}

}  // namespace

std::size_t attach_packed_weights(const InceptionWeights& w, const std::string& path, const std::string& weight_sha256,
                                  std::string* why) {
  PackedWeightCache& c = *w.packed;
  const std::string folded = w.folded_xxh3.empty() ? payload_xxh3(w) : w.folded_xxh3;
  {
    std::lock_guard<std::mutex> lk(c.mu);
    c.file = path;
    c.weight_sha256 = weight_sha256;
    c.folded_xxh3 = folded;
  }
  std::string ignored;
  std::string& reason = why ? *why : ignored;
  reason.clear();
  std::size_t size = 0;
  const auto map = path.empty() ? nullptr : map_file(path, &size, false);  // entries are read as networks take them
  if (!map) return 0;
  const char* const bytes = static_cast<const char*>(map.get());
  reason = "not a vecbench packed-weights file of version 3, or cut short";
  std::uint64_t hlen = 0, sum = 0;
  if (size < kPackedPrefix || std::memcmp(bytes, kPackedMagic, sizeof kPackedMagic) != 0) return 0;
  std::memcpy(&hlen, bytes + sizeof kPackedMagic, sizeof hlen);
  std::memcpy(&sum, bytes + sizeof kPackedMagic + sizeof hlen, sizeof sum);
  if (hlen > (1u << 24) || kPackedPrefix + hlen > size || (kPackedPrefix + hlen) % kPayloadAlign != 0) return 0;
  const std::size_t payload = kPackedPrefix + static_cast<std::size_t>(hlen);
  if (XXH3_64bits(bytes + kPackedPrefix, static_cast<std::size_t>(hlen)) != sum) {
    reason = "its header's checksum does not match (the file is corrupted)";
    return 0;
  }
  const auto h = nlohmann::json::parse(bytes + kPackedPrefix, bytes + payload, nullptr, false);
  if (h.is_discarded()) return 0;
  try {
    if (h.at("payload_bytes").get<std::size_t>() != size - payload) return 0;
    reason = packed_header_mismatch(h, weight_sha256, folded);
    if (!reason.empty()) return 0;
    reason = "an entry does not fit the model's layers or the file";
    if (!read_packed_entries(h, w, map, bytes + payload, size - payload, c)) return 0;
  } catch (const std::exception&) {  // JSON of the wrong types, a filter that does not fit
    return 0;
  }
  reason.clear();
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // used now: the cache's pruning keeps it longest
  return h.at("onednn").size() + h.at("winograd").size();
}

}  // namespace vecbench
