// Merging what several processes wrote into output folders: the per-rank manifests into one
// manifest.jsonl (one line per input; complete data only; one fingerprint).
#pragma once
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
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
  std::map<std::string, nlohmann::json> ok, err;
  std::vector<std::string> seen;
  std::set<std::string> seen_set;
  for (const auto& dir : dirs) {
    const fs::path dir_c = fs::weakly_canonical(dir, ec);
    const bool same = dir_c == out_c;
    LineDataCheck complete(dir, dim);
    for (const auto& file : manifest_files(dir)) {
      m.files.push_back(file);
      for_each_manifest_line(file, [&](nlohmann::json j) {
        const std::string input = manifest_input(j);  // byte for byte ("input_hex" when not UTF-8)
        if (input.empty()) return;
        ++m.lines;
        if (j.value("fp", std::string()) != m.fingerprint_id) {
          ++m.other_fp;
          return;
        }
        if (seen_set.insert(input).second) seen.push_back(input);
        if (manifest_ok(j)) {
          if (!complete(j)) {
            ok.erase(input);  // the newest ok line decides: an older one was superseded
            ++m.dropped;
            return;
          }
          if (!same)
            for (const char* k : {"output", "shard"})
              if (j.contains(k) && j[k].is_string())
                j[k] = (dir_c / j[k].get<std::string>()).lexically_normal().lexically_relative(out_c).string();
          ok[input] = j;
        } else {
          err[input] = j;
        }
      });
    }
  }
  if (!fp.empty()) open_store_identity(out, fp, false, std::cerr);
  std::map<std::string, std::size_t> rank;
  for (std::size_t i = 0; i < order.size(); ++i) rank.emplace(order[i], i);
  std::stable_sort(seen.begin(), seen.end(), [&](const std::string& a, const std::string& b) {
    const auto ia = rank.find(a), ib = rank.find(b);
    if (ia != rank.end() || ib != rank.end()) {
      if (ia == rank.end()) return false;
      if (ib == rank.end()) return true;
      return ia->second < ib->second;
    }
    return natural_less(a, b);
  });
  std::string text;
  for (const auto& input : seen) {
    const auto it = ok.find(input);
    if (it != ok.end()) {
      text += manifest_text(it->second);
      ++m.ok;
    } else if (err.count(input)) {
      text += manifest_text(err[input]);
      ++m.errors;
    } else {
      continue;  // only ok lines with missing data
    }
    ++m.inputs;
  }
  atomic_write(out / "manifest.jsonl", text);
  return m;
}

// ---- Samples of several ranks -------------------------------------------------------------------

}  // namespace vecbench
