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

/// What a manifest line's "src" recorded (read by parse_manifest_line).
struct RecordedIdentity {
  bool present = false;             ///< the line has "src"
  std::optional<InputIdentity> id;  ///< its size, mtime_ns, ino and dev, when "src" is an object with all four
  bool has_xxh3 = false;            ///< "src" has "xxh3" (`--hash-inputs`)
  std::string xxh3;                 ///< its value ("" when not a string: it matches no file)
};

/// Whether two manifest lines recorded the same input content: both without "src" (nothing tells
/// them apart), else both with it and, when both hashed the file (`--hash-inputs`), the same
/// checksum, otherwise the same size, mtime, inode and device (a line with "src" and one without:
/// not the same). merge_manifests keeps an input's finished vector over a newer unfinished line of
/// the same content.
inline bool same_recorded_identity(const RecordedIdentity& a, const RecordedIdentity& b) {
  if (!a.present || !b.present) return a.present == b.present;
  if (a.has_xxh3 && b.has_xxh3) return !a.xxh3.empty() && a.xxh3 == b.xxh3;
  return a.id && b.id && *a.id == *b.id;
}

/// Whether the input a manifest line was made from is still the same: true when the line records
/// no identity (a store written before it was recorded, or an input that is not a file: see
/// input_newer_than_its_data for the former); false when the line's identity differs from `now`, is malformed, or the
/// file is gone. With `now_xxh3` (`--hash-inputs`) and a line that recorded one, the content decides: a file touched
/// but unchanged is not redone, one rewritten with its old size and mtime is.
inline bool identity_unchanged(const RecordedIdentity& was, const std::optional<InputIdentity>& now,
                               const std::string& now_xxh3 = "") {
  if (!was.present) return true;
  if (!now) return false;
  if (!now_xxh3.empty() && was.has_xxh3) return was.xxh3 == now_xxh3;
  return was.id && *was.id == *now;
}

/// For a line written before identities were recorded (a version-1 store, `was` absent): whether
/// the input file was modified after the data the line points at (`data_file`, its output or
/// shard) was written, the one sign of a rewritten input such a line leaves. False when either
/// cannot be stat'ed.
inline bool input_newer_than_its_data(const RecordedIdentity& was, const std::string* data_file,
                                      const std::string& out_dir, const std::optional<InputIdentity>& now) {
  if (!now || was.present || !data_file) return false;
  const auto data = stat_identity(out_dir + "/" + *data_file);
  return data && now->mtime_ns > data->mtime_ns;
}

}  // namespace vecbench
