// The oneDNN engine's weights file (include/vecbench/engine/weights_file.hpp). No LibTorch here.
#include "vecbench/engine/weights_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
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

#include "packed_weight_cache.hpp"
#include "vecbench/core/checksum.hpp"
#include "vecbench/core/fs_util.hpp"
#include "vecbench/engine/winograd.hpp"

namespace vecbench {
namespace {

// Version 2 adds "payload_xxh3": the XXH3-64 of every byte after the header, checked at load (a
// flipped bit in a cached weight made every later run's vectors ~1e19, status ok). Version 1
// files have none: they are rebuilt, as any cache that does not check out.
constexpr char kMagic[8] = {'V', 'B', 'W', 'E', 'I', 'G', 'H', '2'};

/// The checksum of the payload: every layer's weights then bias, in the order of `w.convs`, the
/// order the file stores them in (its header lists the layers that way).
std::string payload_xxh3(const InceptionWeights& w) {
  Xxh3 h;
  for (const auto& kv : w.convs) {
    h.update(kv.second.weight.data(), kv.second.weight.size() * sizeof(float));
    h.update(kv.second.bias.data(), kv.second.bias.size() * sizeof(float));
  }
  return h.hex();
}

constexpr std::size_t kPayloadAlign = 64;

}  // namespace

std::string weights_cache_dir() {
  if (const char* d = std::getenv("VECBENCH_WEIGHTS_DIR"); d && *d) return std::string(d) == "off" ? "" : d;
  return (cache_dir() / "weights").string();
}

std::uintmax_t weights_cache_budget() {
  if (const char* m = std::getenv("VECBENCH_WEIGHTS_CACHE_MB"); m && *m) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(m, &end, 10);
    if (end && *end == '\0') return static_cast<std::uintmax_t>(mb) << 20;
  }
  return std::uintmax_t{1024} << 20;
}

std::size_t prune_weights_cache(const std::string& dir, const std::string& keep, std::uintmax_t budget) {
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    std::uintmax_t bytes;
  };
  std::vector<Entry> files;
  std::uintmax_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 7 || name.compare(name.size() - 7, 7, ".onednn") != 0 || !e.is_regular_file(ec)) continue;
    std::error_code e1, e2, e3;
    const Entry f{e.path(), e.last_write_time(e1), e.file_size(e2)};
    if (e1 || e2) continue;
    total += f.bytes;
    if (!keep.empty() && fs::equivalent(f.path, keep, e3)) continue;  // never the file just written
    files.push_back(f);
  }
  std::sort(files.begin(), files.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  std::size_t removed = 0;
  for (const auto& f : files) {  // least recently used first
    if (total <= budget) break;
    if (fs::remove(f.path, ec)) total -= f.bytes, ++removed;  // a process that mapped it keeps its pages
  }
  return removed;
}

std::string weights_file_path(const std::string& weight_sha256, std::uintmax_t model_bytes) {
  const std::string dir = weights_cache_dir();
  if (dir.empty() || weight_sha256.size() < 16 ||
      weight_sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
    return "";
  // ".v2": the format with the payload checksum; an older vecbench on the same machine keeps its
  // own file instead of rewriting this one at every start.
  return (fs::path(dir) / (weight_sha256 + "-" + std::to_string(model_bytes) + ".v2.onednn")).string();
}

void save_inception_weights(const InceptionWeights& w, const std::string& path, const std::string& weight_sha256) {
  nlohmann::json h = {{"weight_sha256", weight_sha256}, {"arch", w.arch},           {"input_size", w.input_size},
                      {"feature_dim", w.feature_dim},   {"input_div", w.input_div}, {"input_mean", w.input_mean},
                      {"input_std", w.input_std}};
  std::size_t floats = 0;
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& [name, l] : w.convs) {
    layers.push_back({{"name", name}, {"shape", l.shape}, {"offset", floats}});
    floats += l.weight.size() + l.bias.size();
  }
  h["layers"] = layers;
  h["floats"] = floats;
  h["payload_xxh3"] = payload_xxh3(w);
  // The payload starts at a 64-byte boundary of the file (the header is padded with spaces, which
  // its JSON ignores), so that a mapped file's floats are aligned (load_inception_weights).
  std::string header = h.dump();
  header.append(
      (kPayloadAlign - (sizeof kMagic + sizeof(std::uint64_t) + header.size()) % kPayloadAlign) % kPayloadAlign, ' ');
  std::string bytes(kMagic, sizeof kMagic);
  const std::uint64_t hlen = header.size();
  bytes.append(reinterpret_cast<const char*>(&hlen), sizeof hlen);
  bytes += header;
  bytes.reserve(bytes.size() + floats * sizeof(float));
  for (const auto& kv : w.convs) {
    bytes.append(reinterpret_cast<const char*>(kv.second.weight.data()), kv.second.weight.size() * sizeof(float));
    bytes.append(reinterpret_cast<const char*>(kv.second.bias.data()), kv.second.bias.size() * sizeof(float));
  }
  fs::create_directories(fs::path(path).parent_path());
  atomic_write(path, bytes.data(), bytes.size());
}

namespace {

/// The whole of `path` mapped read-only (its pages come from the page cache: nothing is copied
/// or zeroed), unmapped when the last holder lets go; null when it cannot be mapped.
std::shared_ptr<const void> map_file(const std::string& path, std::size_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  void* p = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && st.st_size > 0)
    p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return nullptr;
  *size = static_cast<std::size_t>(st.st_size);
  const std::size_t n = *size;
  return std::shared_ptr<const void>(p, [n](const void* q) { ::munmap(const_cast<void*>(q), n); });
}

}  // namespace

std::shared_ptr<const InceptionWeights> load_inception_weights(const std::string& path,
                                                               const std::string& weight_sha256,
                                                               const std::string& source, std::string* why) {
  std::size_t size = 0;
  const auto map = map_file(path, &size);
  if (!map) return nullptr;
  const char* const bytes = static_cast<const char*>(map.get());
  std::string ignored;
  std::string& reason = why ? *why : ignored;
  reason = "not a vecbench weights file of version 2, or cut short";
  std::uint64_t hlen = 0;
  if (size < sizeof kMagic + sizeof hlen || std::memcmp(bytes, kMagic, sizeof kMagic) != 0) return nullptr;
  std::memcpy(&hlen, bytes + sizeof kMagic, sizeof hlen);
  const std::size_t payload = sizeof kMagic + sizeof hlen + hlen;
  if (hlen > (1u << 24) || payload > size) return nullptr;
  const auto h = nlohmann::json::parse(bytes + sizeof kMagic + sizeof hlen, bytes + payload, nullptr, false);
  if (h.is_discarded() || h.value("weight_sha256", std::string()) != weight_sha256) return nullptr;
  // A file written before the payload was aligned (vecbench 2026-12-02 and older): its floats are
  // copied out instead of used in place, and the file is written again, aligned.
  const bool in_place = payload % alignof(float) == 0;
  try {
    auto w = std::make_shared<InceptionWeights>();
    w->source = source;
    w->arch = h.at("arch").get<std::string>();
    w->input_size = h.at("input_size").get<int>();
    w->feature_dim = h.at("feature_dim").get<int>();
    w->input_div = h.at("input_div").get<float>();
    w->input_mean = h.at("input_mean").get<std::array<float, 3>>();
    w->input_std = h.at("input_std").get<std::array<float, 3>>();
    const std::size_t floats = h.at("floats").get<std::size_t>();
    if (floats > (size - payload) / sizeof(float)) return nullptr;  // cut short
    const auto* f = reinterpret_cast<const float*>(bytes + payload);
    const auto take = [&](std::size_t at, std::size_t n) {
      if (in_place) return LayerFloats(f + at, n, map);
      std::vector<float> v(n);
      std::memcpy(v.data(), bytes + payload + at * sizeof(float), n * sizeof(float));
      return LayerFloats(std::move(v));
    };
    std::size_t at = 0;  // layers follow each other in the header's order
    for (const auto& l : h.at("layers")) {
      FoldedConv c;
      c.shape = l.at("shape").get<std::array<int64_t, 4>>();
      if (l.at("offset").get<std::size_t>() != at) return nullptr;
      for (const int64_t d : c.shape)
        if (d < 0 || d > (1 << 16)) return nullptr;
      const auto nw = static_cast<std::size_t>(c.shape[0] * c.shape[1] * c.shape[2] * c.shape[3]);
      const auto nb = static_cast<std::size_t>(c.shape[0]);
      if (nw + nb > floats - at) return nullptr;
      c.weight = take(at, nw);
      c.bias = take(at + nw, nb);
      at += nw + nb;
      w->convs.emplace(l.at("name").get<std::string>(), std::move(c));
    }
    if (at != floats) return nullptr;
    if (h.value("payload_xxh3", std::string()) != payload_xxh3(*w)) {  // the payload as read
      reason = "its payload checksum does not match (the file is corrupted)";
      return nullptr;
    }
    w->folded_xxh3 = h.value("payload_xxh3", std::string());
    reason.clear();
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // used now: the cache's pruning keeps it longest
    if (!in_place) try {
        save_inception_weights(*w, path, weight_sha256);
      } catch (const std::exception&) {  // a read-only cache: the copy serves this run
      }
    return w;
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

// The packed-weights file: magic, u64 header length, the JSON header (padded so that the payload
// starts at a 64-byte boundary), then the payload, every piece of it at a 64-byte boundary of the
// payload: each oneDNN entry's memory descriptor (its raw dnnl_memory_desc_t) and packed bytes,
// each Winograd filter's transformed floats and bias (as winograd::make_filter lays them out).

namespace {

constexpr char kPackedMagic[8] = {'V', 'B', 'P', 'A', 'C', 'K', 'D', '1'};

std::string onednn_version() {
  const auto* v = dnnl::version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}
std::string onednn_isa() { return std::to_string(static_cast<unsigned>(dnnl::get_effective_cpu_isa())); }

std::size_t aligned_up(std::size_t n) { return (n + kPayloadAlign - 1) / kPayloadAlign * kPayloadAlign; }

/// XXH3-64 of the filters this build's make_filter makes from fixed weights, for every kernel
/// and `block`: a file whose filters another transform or layout made (an older or newer
/// vecbench) differs. Two input blocks and two panels, so that a change in how either is laid
/// out shows too.
std::string winograd_probe(int block) {
  using winograd::Kernel;
  Xxh3 h;
  for (const Kernel k : {Kernel::k3x3, Kernel::k1x7, Kernel::k7x1, Kernel::k1x3, Kernel::k3x1, Kernel::k5x5}) {
    winograd::ConvShape one;
    one.kernel = k;
    const int in_c = 2 * block, out_c = 4 * block, taps = one.kh() * one.kw();
    std::vector<float> w(static_cast<std::size_t>(in_c * out_c * taps)), b(static_cast<std::size_t>(out_c));
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i * 37 % 101) - 50) / 64.0f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = 0.25f * static_cast<float>(i);
    const auto f = winograd::make_filter(w.data(), b.data(), out_c, in_c, block, k);
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

struct PackedFile {
  std::string header;                                       ///< the JSON header, padded
  std::vector<std::pair<const void*, std::size_t>> pieces;  ///< the payload, in order (null: zeros)
  std::size_t payload = 0;
};

/// The file's header and payload pieces for the cache's entries.
PackedFile packed_file(const PackedWeightCache& c, const std::string& sha) {
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
      if (e.scaled) continue;  // int8's scaled weights: packed again at each start
      const std::size_t desc_at = add(&e.desc.data, sizeof e.desc.data);
      onednn.push_back({{"name", name},
                        {"desc_at", desc_at},
                        {"at", add(e.data.get(), e.desc.get_size())},
                        {"bytes", e.desc.get_size()}});
    }
  for (const auto& [name, fl] : c.winograd) {
    block = fl->block;
    const std::size_t u_at = add(fl->u, fl->u_floats() * sizeof(float));
    wino.push_back({{"name", name},
                    {"kernel", static_cast<int>(fl->kernel)},
                    {"in_c", fl->in_c},
                    {"out_c", fl->out_c},
                    {"block", fl->block},
                    {"u_at", u_at},
                    {"bias_at", add(fl->bias, static_cast<std::size_t>(fl->out_c) * sizeof(float))}});
  }
  Xxh3 h;
  for (const auto& [p, n] : f.pieces) h.update(p, n);
  nlohmann::json j = {{"weight_sha256", sha},
                      {"folded_xxh3", c.folded_xxh3},
                      {"onednn_version", onednn_version()},
                      {"onednn_isa", onednn_isa()},
                      {"desc_bytes", sizeof(dnnl_memory_desc_t)},
                      {"payload_bytes", f.payload},
                      {"payload_xxh3", h.hex()},
                      {"onednn", onednn},
                      {"winograd", wino}};
  if (block) j["winograd_block"] = block, j["winograd_probe"] = winograd_probe(block);
  f.header = j.dump();
  f.header.append(
      (kPayloadAlign - (sizeof kPackedMagic + sizeof(std::uint64_t) + f.header.size()) % kPayloadAlign) % kPayloadAlign,
      ' ');
  return f;
}

}  // namespace

std::string packed_file_path(const std::string& weights_path) {
  if (weights_path.empty()) return "";
  std::string base = weights_path;
  const std::string ext = ".v2.onednn";
  if (base.size() > ext.size() && base.compare(base.size() - ext.size(), ext.size(), ext) == 0)
    base.resize(base.size() - ext.size());
  return base + ".packed.isa" + onednn_isa() + ".dnnl" + onednn_version() + ".v1.onednn";
}

void save_packed_weights(const InceptionWeights& w) {
  PackedWeightCache& c = *w.packed;
  std::string path, bytes;
  {
    std::lock_guard<std::mutex> lk(c.mu);
    if (c.file.empty() || !c.dirty) return;
    path = c.file;
    const PackedFile f = packed_file(c, c.weight_sha256);
    bytes.reserve(sizeof kPackedMagic + sizeof(std::uint64_t) + f.header.size() + f.payload);
    bytes.append(kPackedMagic, sizeof kPackedMagic);
    const std::uint64_t hlen = f.header.size();
    bytes.append(reinterpret_cast<const char*>(&hlen), sizeof hlen);
    bytes += f.header;
    for (const auto& [p, n] : f.pieces) bytes.append(static_cast<const char*>(p), n);
    c.dirty = false;
  }
  try {
    atomic_write(path, bytes.data(), bytes.size());
    prune_weights_cache(fs::path(path).parent_path().string(), path, weights_cache_budget());
  } catch (const std::exception&) {  // a read-only or full cache: the next start packs again
  }
}

namespace {

/// The entries of a mapped packed-weights file (the header checked by the caller) into `c`;
/// false where one does not fit `w`'s layers or the payload (nothing added then).
bool read_packed_entries(const nlohmann::json& h, const InceptionWeights& w, const std::shared_ptr<const void>& map,
                         const char* payload, std::size_t payload_bytes, PackedWeightCache& c) {
  const auto in_payload = [&](std::size_t at, std::size_t n) {
    return at % kPayloadAlign == 0 && at <= payload_bytes && n <= payload_bytes - at;
  };
  std::map<std::string, std::vector<PackedWeightCache::Entry>> layers;
  std::map<std::string, std::shared_ptr<const winograd::Filter>> wino;
  auto shared = std::const_pointer_cast<void>(map);
  for (const auto& e : h.at("onednn")) {
    const auto name = e.at("name").get<std::string>();
    const auto desc_at = e.at("desc_at").get<std::size_t>(), at = e.at("at").get<std::size_t>();
    const auto bytes = e.at("bytes").get<std::size_t>();
    if (!w.convs.count(name) || !in_payload(desc_at, sizeof(dnnl_memory_desc_t)) || !in_payload(at, bytes))
      return false;
    dnnl_memory_desc_t raw;
    std::memcpy(&raw, payload + desc_at, sizeof raw);
    const dnnl::memory::desc desc(raw);
    if (desc.get_size() != bytes) return false;
    layers[name].push_back({desc, std::shared_ptr<void>(shared, const_cast<char*>(payload + at))});
  }
  for (const auto& e : h.at("winograd")) {
    const auto name = e.at("name").get<std::string>();
    const auto kernel = static_cast<winograd::Kernel>(e.at("kernel").get<int>());
    const int in_c = e.at("in_c").get<int>(), out_c = e.at("out_c").get<int>(), block = e.at("block").get<int>();
    const auto u_at = e.at("u_at").get<std::size_t>(), bias_at = e.at("bias_at").get<std::size_t>();
    const auto it = w.convs.find(name);
    const int k = e.at("kernel").get<int>();
    if (k < 0 || k > static_cast<int>(winograd::Kernel::k5x5) || it == w.convs.end() ||
        !fits(it->second.shape, kernel, in_c, out_c) || block != h.value("winograd_block", 0) || !in_payload(u_at, 0) ||
        !in_payload(bias_at, 0))
      return false;
    auto f = winograd::filter_view(out_c, in_c, block, kernel, reinterpret_cast<const float*>(payload + u_at),
                                   reinterpret_cast<const float*>(payload + bias_at), map);
    if (!in_payload(u_at, f->u_floats() * sizeof(float)) || !in_payload(bias_at, out_c * sizeof(float))) return false;
    wino.emplace(name, std::move(f));
  }
  std::lock_guard<std::mutex> lk(c.mu);
  for (auto& [name, entries] : layers)
    for (auto& e : entries) c.layers[name].push_back(std::move(e));
  for (auto& [name, f] : wino) c.winograd.emplace(name, std::move(f));
  return true;
}

}  // namespace

std::size_t attach_packed_weights(const InceptionWeights& w, const std::string& path, const std::string& weight_sha256,
                                  std::string* why) {
  PackedWeightCache& c = *w.packed;
  {
    std::lock_guard<std::mutex> lk(c.mu);
    c.file = path;
    c.weight_sha256 = weight_sha256;
    c.folded_xxh3 = w.folded_xxh3.empty() ? payload_xxh3(w) : w.folded_xxh3;
  }
  std::string ignored;
  std::string& reason = why ? *why : ignored;
  reason.clear();
  std::size_t size = 0;
  const auto map = path.empty() ? nullptr : map_file(path, &size);
  if (!map) return 0;
  const char* const bytes = static_cast<const char*>(map.get());
  reason = "not a vecbench packed-weights file of version 1, or cut short";
  std::uint64_t hlen = 0;
  if (size < sizeof kPackedMagic + sizeof hlen || std::memcmp(bytes, kPackedMagic, sizeof kPackedMagic) != 0) return 0;
  std::memcpy(&hlen, bytes + sizeof kPackedMagic, sizeof hlen);
  const std::size_t payload = sizeof kPackedMagic + sizeof hlen + hlen;
  if (hlen > (1u << 24) || payload > size || payload % kPayloadAlign != 0) return 0;
  const auto h = nlohmann::json::parse(bytes + sizeof kPackedMagic + sizeof hlen, bytes + payload, nullptr, false);
  if (h.is_discarded()) return 0;
  try {
    const auto payload_bytes = h.at("payload_bytes").get<std::size_t>();
    if (payload_bytes > size - payload) return 0;
    reason = "made for other weights, another oneDNN or ISA, or another Winograd transform";
    const int block = h.value("winograd_block", 0);
    if (h.at("weight_sha256") != weight_sha256 || h.at("folded_xxh3") != c.folded_xxh3 ||
        h.at("onednn_version") != onednn_version() || h.at("onednn_isa") != onednn_isa() ||
        h.at("desc_bytes").get<std::size_t>() != sizeof(dnnl_memory_desc_t) ||
        (block && h.value("winograd_probe", std::string()) != winograd_probe(block)))
      return 0;
    if (h.at("payload_xxh3").get<std::string>() != xxh3_hex(bytes + payload, payload_bytes)) {
      reason = "its payload checksum does not match (the file is corrupted)";
      return 0;
    }
    reason = "an entry does not fit the model's layers or the file";
    if (!read_packed_entries(h, w, map, bytes + payload, payload_bytes, c)) return 0;
  } catch (const std::exception&) {  // JSON of the wrong types, a filter that does not fit
    return 0;
  }
  reason.clear();
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // used now: the cache's pruning keeps it longest
  return h.at("onednn").size() + h.at("winograd").size();
}

}  // namespace vecbench
