// The oneDNN engine's weights file (include/vecbench/engine/weights_file.hpp). No LibTorch here.
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

namespace vecbench::weights_detail {  // weights_file_io.hpp

std::string payload_xxh3(const InceptionWeights& w) {
  Xxh3 h;
  for (const auto& kv : w.convs) {
    h.update(kv.second.weight.data(), kv.second.weight.size() * sizeof(float));
    h.update(kv.second.bias.data(), kv.second.bias.size() * sizeof(float));
  }
  return h.hex();
}

std::shared_ptr<const void> map_file(const std::string& path, std::size_t* size, bool populate) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  void* p = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && st.st_size > 0)
    p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0),
               fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return nullptr;
  *size = static_cast<std::size_t>(st.st_size);
  const std::size_t n = *size;
  return std::shared_ptr<const void>(p, [n](const void* q) { ::munmap(const_cast<void*>(q), n); });
}

}  // namespace vecbench::weights_detail

namespace vecbench {
using namespace weights_detail;  // NOLINT: the two files' shared pieces
namespace {

// Version 2 adds "payload_xxh3": the XXH3-64 of every byte after the header, checked at load (a
// flipped bit in a cached weight made every later run's vectors ~1e19, status ok). Version 1
// files have none: they are rebuilt, as any cache that does not check out.
constexpr char kMagic[8] = {'V', 'B', 'W', 'E', 'I', 'G', 'H', '2'};

/// Whether `name` is the temp file of an atomic write (fs_util.hpp) of a cache file whose write was
/// killed: ".<64 hex digits of a sha256>-....tmp.<pid>..." (atomic_write cuts long names short).
bool cache_temp(const std::string& name) {
  if (name.size() < 67 || name[0] != '.' || name[65] != '-' || name.find(".tmp.") == std::string::npos) return false;
  return name.find_first_not_of("0123456789abcdef", 1) == 65;
}

/// Whether cache file `name` is one that a write of `keep` (a path) keeps beside it: the weights
/// file of its export ("<sha>-<bytes>.v2.onednn") and that file's packed-weights file for this
/// ISA and oneDNN (packed_file_path); packed files of other ISAs or oneDNN versions may go.
bool same_export(const std::string& name, const std::string& keep) {
  const fs::path k(keep);
  const std::string kn = k.filename().string();
  const std::size_t dot = kn.find('.');
  if (dot == std::string::npos || dot == 0) return false;
  const std::string weights = kn.substr(0, dot) + ".v2.onednn";
  return name == weights ||
         name == fs::path(packed_file_path((k.parent_path() / weights).string())).filename().string();
}

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
  const auto now = fs::file_time_type::clock::now();
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    std::error_code e0;
    if (cache_temp(name) && e.is_regular_file(e0) && now - e.last_write_time(e0) > std::chrono::minutes(10)) {
      fs::remove(e.path(), e0);  // an atomic write of a cache file killed mid-way (up to a file's size)
      continue;
    }
    if (name.size() < 7 || name.compare(name.size() - 7, 7, ".onednn") != 0 || !e.is_regular_file(ec)) continue;
    std::error_code e1, e2, e3;
    const Entry f{e.path(), e.last_write_time(e1), e.file_size(e2)};
    if (e1 || e2) continue;
    total += f.bytes;
    if (!keep.empty() && (fs::equivalent(f.path, keep, e3) || same_export(name, keep)))
      continue;  // never the file just written, nor the other files of its export
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
  nlohmann::json h = {{"weight_sha256", weight_sha256}, {"arch", enum_name(w.arch)}, {"input_size", w.input_size},
                      {"feature_dim", w.feature_dim},   {"input_div", w.input_div},  {"input_mean", w.input_mean},
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
    w->arch = parse_enum<InceptionArch>(h.at("arch").get<std::string>(), "arch");
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
  } catch (const ConfigError&) {  // an architecture this vecbench does not know: imported again
    return nullptr;
  }
}

}  // namespace vecbench
