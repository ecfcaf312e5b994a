// Merging what several processes wrote into output folders: the per-rank manifests into one
// manifest.jsonl (one line per input; complete data only; one fingerprint).
#pragma once
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/fs_util.hpp"
#include "vecbench/output/fingerprint.hpp"
#include "vecbench/output/manifest.hpp"
#include "vecbench/output/output_lock.hpp"
#include "vecbench/output/writer.hpp"

namespace vecbench {

/// Natural order of names: runs of digits compare as numbers ("synthetic:2" < "synthetic:10").
inline bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (da && db) {
      std::size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      std::string x = a.substr(i, i2 - i), y = b.substr(j, j2 - j);
      x.erase(0, std::min(x.find_first_not_of('0'), x.size()));
      y.erase(0, std::min(y.find_first_not_of('0'), y.size()));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

/// What merge_manifests found.
struct ManifestMerge {
  std::size_t inputs = 0;       ///< lines written (one per input)
  std::size_t ok = 0;           ///< of which "ok"
  std::size_t errors = 0;       ///< of which "error" (no ok line for the input anywhere)
  std::size_t lines = 0;        ///< manifest lines read
  std::size_t dropped = 0;      ///< "ok" lines whose output or shard file is missing or incomplete
  std::size_t other_fp = 0;     ///< lines made under another fingerprint than their folder's (left out)
  std::vector<fs::path> files;  ///< manifests read
  std::string fingerprint_id;   ///< the fingerprint every merged line has ("" for folders without one)
};

/// The one fingerprint of the output folders `dirs` (empty when none has vecbench.json).
/// OutputFolderError when they differ, or when some have one and others hold manifests without:
/// merge never mixes vectors made differently.
inline Fingerprint common_fingerprint(const std::vector<fs::path>& dirs) {
  Fingerprint common;
  std::string first;
  bool unfingerprinted = false;
  for (const auto& dir : dirs) {
    const Fingerprint fp = read_store_fingerprint(dir);
    if (fp.empty()) {
      unfingerprinted = unfingerprinted || !manifest_files(dir).empty();
    } else if (common.empty()) {
      common = fp;
      first = dir.string();
    } else if (fp.id() != common.id()) {
      std::string why =
          "its vectors were made under fingerprint " + fp.id() + ", those of " + first + " under " + common.id() + ":";
      for (const auto& d : fingerprint_diff(common.fields, fp.fields)) why += "\n  " + d;
      throw OutputFolderError(dir.string(), why + "\nmerge refuses to mix them");
    }
    if (!common.empty() && unfingerprinted)
      throw OutputFolderError(dir.string(),
                              "merge refuses to mix folders with a fingerprint (vecbench.json) and "
                              "folders written before fingerprints");
  }
  return common;
}

/// Combines every manifest (manifest.jsonl and manifest-rRRRR.jsonl) of the output directories
/// `dirs` into `out`/manifest.jsonl (atomically): one line per input. An input's line is its
/// newest "ok" line (a rerun that redid an input whose file changed appends one that supersedes
/// the old) when its data (output file, or shard rows) is complete, else its last "error" line. Lines of another
/// fingerprint than their folder's are left out; folders of different fingerprints are refused (common_fingerprint),
/// and `out` gets their vecbench.json. Lines of a directory other than `out` get their output/shard paths rewritten
/// relative to `out`. Order: the input names in `order` first, in that order, then the rest in natural order.
namespace detail {

/// Where merge_manifests found the line it keeps of an input (read back when the merged
/// manifest is written: a million inputs' lines are never held at once).
struct MergePick {
  std::uint32_t file = 0;    ///< index into ManifestMerge::files
  std::uint32_t length = 0;  ///< bytes of the line
  std::uint64_t offset = 0;  ///< where it starts in its file
  bool set = false;
};

/// An input seen by merge_manifests: its name, its newest complete ok line and its last error line.
struct MergeInput {
  std::string name;
  MergePick ok, err;
};

/// The order of the merged manifest: the names in `order` first, in that order, then the rest in
/// natural order (ties in the order first seen).
inline std::vector<std::uint32_t> merge_order(const std::deque<MergeInput>& inputs,
                                              const std::vector<std::string>& order) {
  std::unordered_map<std::string_view, std::size_t> rank;
  for (std::size_t i = 0; i < order.size(); ++i) rank.emplace(order[i], i);
  std::vector<std::uint32_t> idx(inputs.size());
  for (std::uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](std::uint32_t x, std::uint32_t y) {
    const std::string& a = inputs[x].name;
    const std::string& b = inputs[y].name;
    const auto ia = rank.find(a), ib = rank.find(b);
    if (ia != rank.end() || ib != rank.end()) {
      if (ia == rank.end()) return false;
      if (ib == rank.end()) return true;
      return ia->second < ib->second;
    }
    return natural_less(a, b);
  });
  return idx;
}

/// What merge_manifests' scan found: each input's chosen lines, and per manifest its folder and reader.
struct MergeScan {
  std::deque<MergeInput> inputs;            ///< in the order first seen
  std::vector<fs::path> file_dir;           ///< per manifest: its folder (canonical)
  std::vector<ManifestLineReader> readers;  ///< per manifest (opened when read back)
};

/// Reads every manifest of `dirs` (each input's newest complete ok line and last error line).
inline MergeScan scan_for_merge(const std::vector<fs::path>& dirs, int dim, ManifestMerge& m) {
  MergeScan scan;
  std::unordered_map<std::string_view, std::size_t> by_name;  // views of scan.inputs' names
  std::error_code ec;
  for (const auto& dir : dirs) {
    const fs::path dir_c = fs::weakly_canonical(dir, ec);
    LineDataCheck complete(dir, dim);
    for (const auto& file : manifest_files(dir)) {
      const auto file_index = static_cast<std::uint32_t>(m.files.size());
      struct stat st {};
      if (::stat(file.c_str(), &st) != 0)
        throw IoError(file.string(), std::string("cannot read: ") + std::strerror(errno));
      m.files.push_back(file);
      scan.file_dir.push_back(dir_c);
      scan.readers.emplace_back(file, st.st_dev, st.st_ino);
      for_each_manifest_line(file, [&](const ManifestLine& l) {
        if (l.input.empty()) return;
        ++m.lines;
        if (l.fp != m.fingerprint_id) {
          ++m.other_fp;
          return;
        }
        auto it = by_name.find(l.input);
        if (it == by_name.end()) {
          scan.inputs.push_back({l.input, {}, {}});
          it = by_name.emplace(scan.inputs.back().name, scan.inputs.size() - 1).first;
        }
        MergeInput& in = scan.inputs[it->second];
        const MergePick pick{file_index, l.length, l.offset, true};
        if (!l.ok()) {
          in.err = pick;
        } else if (complete(l)) {
          in.ok = pick;
        } else {
          in.ok = {};  // the newest ok line decides: an older one was superseded
          ++m.dropped;
        }
      });
    }
  }
  return scan;
}

/// Writes `out`/manifest.jsonl from `scan`: each input's line read back where the scan found it
/// (and checked to be that input's), in merge_order; at most 64 manifests open at once (a job of
/// thousands of ranks stays under the open-file limit).
inline void write_merged(const fs::path& out, const fs::path& out_c, const std::vector<std::string>& order,
                         MergeScan& scan, ManifestMerge& m) {
  const auto idx = merge_order(scan.inputs, order);
  std::deque<std::uint32_t> open_files;
  auto reader = [&](std::uint32_t file) -> ManifestLineReader& {
    if (!scan.readers[file].is_open()) {
      if (open_files.size() == 64) {
        scan.readers[open_files.front()].close();
        open_files.pop_front();
      }
      open_files.push_back(file);
    }
    return scan.readers[file];
  };
  std::map<std::pair<std::uint32_t, std::string>, std::string> moved;  // (manifest, data file) -> path from `out`
  std::vector<char> elsewhere;                                         // per manifest: its folder is not `out`
  for (const auto& dir : scan.file_dir) elsewhere.push_back(dir != out_c);
  ManifestLine again;
  auto line_text = [&](const MergePick& p, const std::string& input) {
    std::string text = reader(p.file).text(p.offset, p.length);
    if (!parse_manifest_line(text, again) || again.input != input)
      throw IoError(m.files[p.file].string(), "its line at byte " + std::to_string(p.offset) +
                                                  " is not the one scanned (the manifest changed while it was merged)");
    // An ok line of another folder points at its data from `out` (error lines stay as they are)
    if (!again.ok() || !again.data_file() || !elsewhere[p.file]) return text + "\n";
    auto j = nlohmann::json::parse(text);
    for (const char* k : {"output", "shard"}) {
      if (!j.contains(k) || !j[k].is_string()) continue;
      auto it = moved.find({p.file, j[k].get<std::string>()});
      if (it == moved.end()) {
        const std::string to =
            (scan.file_dir[p.file] / j[k].get<std::string>()).lexically_normal().lexically_relative(out_c).string();
        it = moved.emplace(std::make_pair(p.file, j[k].get<std::string>()), to).first;
      }
      j[k] = it->second;
    }
    return manifest_text(j);
  };
  atomic_write_with(out / "manifest.jsonl", [&](std::FILE* f) {
    for (const std::uint32_t i : idx) {
      const MergeInput& in = scan.inputs[i];
      if (!in.ok.set && !in.err.set) continue;  // only ok lines with missing data
      const std::string text = line_text(in.ok.set ? in.ok : in.err, in.name);
      if (std::fwrite(text.data(), 1, text.size(), f) != text.size()) return false;
      ++(in.ok.set ? m.ok : m.errors);
      ++m.inputs;
    }
    return true;
  });
}

}  // namespace detail

inline ManifestMerge merge_manifests(const std::vector<fs::path>& dirs, const fs::path& out,
                                     const std::vector<std::string>& order = {}) {
  ManifestMerge m;
  std::error_code ec;
  for (const auto& dir : dirs)
    if (!fs::is_directory(dir, ec)) throw IoError(dir.string(), "not a directory");
  const Fingerprint fp = common_fingerprint(dirs);
  m.fingerprint_id = fp.empty() ? "" : fp.id();
  const int dim = fp.empty() ? 0 : fp.fields.value("feature_dim", 0);
  const fs::path out_c = fs::weakly_canonical(out, ec);
  detail::MergeScan scan = detail::scan_for_merge(dirs, dim, m);
  if (!fp.empty()) open_store_identity(out, fp, false, std::cerr);
  detail::write_merged(out, out_c, order, scan, m);
  return m;
}

// ---- Samples of several ranks -------------------------------------------------------------------

}  // namespace vecbench
