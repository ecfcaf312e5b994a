// Reading an output folder as its readers should: the newest ok line of each input of the
// folder's fingerprint (a rerun that redid an input supersedes its older lines), and the vectors
// those lines point at, each file read once. Used by `vecbench verify`, `stats` and `fid`.
#pragma once
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/files/npy.hpp"
#include "vecbench/output/manifest.hpp"
#include "vecbench/output/vector_files.hpp"

namespace vecbench {

/// One stored vector: whose, where, and its checksum.
struct StoreEntry {
  std::string input;  ///< byte-exact (ManifestLine::input)
  std::string file;   ///< the output or shard, relative to the folder
  long row = -1;      ///< shard row; -1 for a vector file
  std::string xxh3;   ///< "" for lines written before checksums
};

/// The newest ok line of each input whose fingerprint is `fp_id` ("" = any), sorted by file and
/// row so that each file is read once.
inline std::vector<StoreEntry> newest_ok_entries(const fs::path& dir, const std::string& fp_id) {
  std::map<std::string, StoreEntry> by_input;
  for (const auto& m : manifest_files(dir))
    for_each_manifest_line(m, [&](const ManifestLine& l) {
      if (!l.ok() || (!fp_id.empty() && l.fp != fp_id)) return;
      StoreEntry e;
      e.input = l.input;
      e.xxh3 = l.xxh3;
      if (l.output) {
        e.file = *l.output;
      } else if (l.shard && l.row) {
        e.file = *l.shard;
        e.row = *l.row;
      } else {
        e.file = "(no output named)";
      }
      by_input[e.input] = e;
    });
  std::vector<StoreEntry> v;
  for (auto& kv : by_input) v.push_back(std::move(kv.second));
  std::sort(v.begin(), v.end(),
            [](const StoreEntry& a, const StoreEntry& b) { return std::tie(a.file, a.row) < std::tie(b.file, b.row); });
  return v;
}

/// The vectors of a file of a folder: one for a .vc or .npy vector file, rows for a shard; empty
/// with `why` set when it is missing or not a complete float32 file of `dim` columns (any when 0).
inline std::vector<float> read_store_file(const fs::path& p, int dim, std::string& why) {
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    why = "missing";
    return {};
  }
  try {
    if (p.extension() == ".vc") {
      auto v = read_vc(p);
      if (dim > 0 && v.size() != static_cast<std::size_t>(dim))
        why = "truncated (" + std::to_string(v.size()) + " values)";
      return why.empty() ? v : std::vector<float>{};
    }
    if (complete_f32_npy_shape(p, dim).empty()) {
      why = "truncated or not a float32 array of " + std::to_string(dim) + " columns";
      return {};
    }
    return npy::as_f32(npy::load(p));
  } catch (const std::exception& e) {
    why = std::string("unreadable: ") + e.what();
    return {};
  }
}

/// Calls `fn(entry, vector, dim, why)` for each of `entries` (newest_ok_entries of `dir`), each
/// file read once: `vector` points at the line's `dim` floats, or is null with `why` saying why
/// they cannot be read (the file missing, cut or unreadable, or the row not in it). `dim` is the
/// vectors' length (0: as the files say).
template <class Fn>
void for_each_stored_vector(const fs::path& dir, const std::vector<StoreEntry>& entries, int dim, Fn&& fn) {
  std::string file, file_why;
  std::vector<float> v;
  for (const StoreEntry& e : entries) {
    if (e.file != file) {  // entries come sorted by file
      file = e.file;
      file_why.clear();
      v = read_store_file(dir / e.file, dim, file_why);
    }
    const std::size_t d = dim > 0 ? static_cast<std::size_t>(dim) : v.size();
    const std::size_t at = e.row < 0 ? 0 : static_cast<std::size_t>(e.row) * d;
    std::string why = file_why;
    if (why.empty() && (d == 0 || at + d > v.size())) why = "row " + std::to_string(e.row) + " is not in it";
    fn(e, why.empty() ? v.data() + at : nullptr, static_cast<int>(d), why);
  }
}

}  // namespace vecbench
