// What identifies an input file's content when it was read, as the manifest records it ("src":
// size, mtime in ns, inode, device; git's index and rsync's quick check use the same): a file
// rewritten under the same name (generated samples, every epoch) gets another mtime, and usually
// another size or inode, so its old vector is not served as its own.
#pragma once
#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace vecbench {

struct InputIdentity {
  std::int64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t ino = 0;
  std::uint64_t dev = 0;
  bool operator==(const InputIdentity& o) const {
    return size == o.size && mtime_ns == o.mtime_ns && ino == o.ino && dev == o.dev;
  }
  bool operator!=(const InputIdentity& o) const { return !(*this == o); }
};

/// The identity of the file at `path` now; nullopt when it cannot be stat'ed (not a file: a
/// synthetic or predecoded input, or a file that is gone, which its read will report).
inline std::optional<InputIdentity> stat_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  InputIdentity id;
  id.size = static_cast<std::int64_t>(st.st_size);
  id.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  id.ino = static_cast<std::uint64_t>(st.st_ino);
  id.dev = static_cast<std::uint64_t>(st.st_dev);
  return id;
}

/// The manifest line's "src" object.
inline nlohmann::json identity_json(const InputIdentity& id) {
  return {{"size", id.size}, {"mtime_ns", id.mtime_ns}, {"ino", id.ino}, {"dev", id.dev}};
}

/// Whether the input a manifest line was made from is still the same: true when the line records
/// no identity (a store written before it was recorded, or an input that is not a file: see
/// input_newer_than_its_data for the former); false when the line's identity differs from `now`, is malformed, or the
/// file is gone. With `now_xxh3` (`--hash-inputs`) and a line that recorded one, the content decides: a file touched
/// but unchanged is not redone, one rewritten with its old size and mtime is.
inline bool identity_unchanged(const nlohmann::json& line, const std::optional<InputIdentity>& now,
                               const std::string& now_xxh3 = "") {
  const auto it = line.find("src");
  if (it == line.end()) return true;
  if (!now || !it->is_object()) return false;
  if (!now_xxh3.empty() && it->contains("xxh3")) return (*it)["xxh3"] == now_xxh3;
  try {
    InputIdentity was;
    was.size = it->at("size").get<std::int64_t>();
    was.mtime_ns = it->at("mtime_ns").get<std::int64_t>();
    was.ino = it->at("ino").get<std::uint64_t>();
    was.dev = it->at("dev").get<std::uint64_t>();
    return was == *now;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

/// For a line written before identities were recorded (a version-1 store): whether the input
/// file was modified after the data the line points at ("output", or "shard") was written, the
/// one sign of a rewritten input such a line leaves. False when either cannot be stat'ed.
inline bool input_newer_than_its_data(const nlohmann::json& line, const std::string& out_dir,
                                      const std::optional<InputIdentity>& now) {
  if (!now || line.contains("src")) return false;
  const char* key = line.contains("output") ? "output" : "shard";
  const auto it = line.find(key);
  if (it == line.end() || !it->is_string()) return false;
  const auto data = stat_identity(out_dir + "/" + it->get<std::string>());
  return data && now->mtime_ns > data->mtime_ns;
}

}  // namespace vecbench
