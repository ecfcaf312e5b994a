// The oneDNN engine's weights file (include/vecbench/engine/weights_file.hpp). No LibTorch here.
#include "vecbench/engine/weights_file.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "vecbench/core/checksum.hpp"
#include "vecbench/core/fs_util.hpp"

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

struct File {
  std::FILE* f;
  ~File() {
    if (f) std::fclose(f);
  }
};

}  // namespace

std::string weights_cache_dir() {
  if (const char* d = std::getenv("VECBENCH_WEIGHTS_DIR"); d && *d) return std::string(d) == "off" ? "" : d;
  return (cache_dir() / "weights").string();
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
  const std::string header = h.dump();
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
  File file{std::fopen(path.c_str(), "rb")};
  if (!file.f) return nullptr;
  std::string ignored;
  std::string& reason = why ? *why : ignored;
  reason = "not a vecbench weights file of version 2, or cut short";
  char magic[sizeof kMagic];
  std::uint64_t hlen = 0;
  if (std::fread(magic, 1, sizeof magic, file.f) != sizeof magic || std::memcmp(magic, kMagic, sizeof magic) != 0 ||
      std::fread(&hlen, sizeof hlen, 1, file.f) != 1 || hlen > (1u << 24))
    return nullptr;
  std::string header(hlen, '\0');
  if (std::fread(header.data(), 1, hlen, file.f) != hlen) return nullptr;
  const auto h = nlohmann::json::parse(header, nullptr, false);
  if (h.is_discarded() || h.value("weight_sha256", std::string()) != weight_sha256) return nullptr;
  try {
    auto w = std::make_shared<InceptionWeights>();
    w->source = source;
    w->arch = h.at("arch").get<std::string>();
    w->input_size = h.at("input_size").get<int>();
    w->feature_dim = h.at("feature_dim").get<int>();
    w->input_div = h.at("input_div").get<float>();
    w->input_mean = h.at("input_mean").get<std::array<float, 3>>();
    w->input_std = h.at("input_std").get<std::array<float, 3>>();
    std::size_t at = 0;  // layers follow each other in the header's order: read each into place
    for (const auto& l : h.at("layers")) {
      FoldedConv c;
      c.shape = l.at("shape").get<std::array<int64_t, 4>>();
      if (l.at("offset").get<std::size_t>() != at) return nullptr;
      c.weight.resize(static_cast<std::size_t>(c.shape[0] * c.shape[1] * c.shape[2] * c.shape[3]));
      c.bias.resize(static_cast<std::size_t>(c.shape[0]));
      if (std::fread(c.weight.data(), sizeof(float), c.weight.size(), file.f) != c.weight.size() ||
          std::fread(c.bias.data(), sizeof(float), c.bias.size(), file.f) != c.bias.size())
        return nullptr;
      at += c.weight.size() + c.bias.size();
      w->convs.emplace(l.at("name").get<std::string>(), std::move(c));
    }
    if (at != h.at("floats").get<std::size_t>()) return nullptr;
    if (h.value("payload_xxh3", std::string()) != payload_xxh3(*w)) {  // the payload as read
      reason = "its payload checksum does not match (the file is corrupted)";
      return nullptr;
    }
    reason.clear();
    return w;
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

}  // namespace vecbench
