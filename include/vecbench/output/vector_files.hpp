// The names and text of vector files: unique hashed names for long, colliding or non-UTF-8
// output names, and the `.vc` text layout the seed wrote (np.savetxt's).
#pragma once
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/sha256.hpp"

namespace vecbench {

namespace fs = std::filesystem;

/// Longest output file name component vecbench makes (bytes); longer ones are shortened with a
/// hash, leaving room under the usual 255-byte limit for temp-file affixes.
constexpr std::size_t kMaxOutputNameBytes = 200;

/// The output name of input `key` made unique: `rel` (a relative path ending in `ext`) with its
/// last component cut to a UTF-8-clean prefix plus "~" and `hex_digits` of sha256(key).
inline std::string hashed_output_name(const std::string& rel, const std::string& ext, const std::string& key,
                                      std::size_t hex_digits = 16) {
  const fs::path p(rel);
  std::string stem = p.filename().string();
  if (stem.size() >= ext.size() && stem.compare(stem.size() - ext.size(), ext.size(), ext) == 0)
    stem.resize(stem.size() - ext.size());
  std::size_t cut = std::min<std::size_t>(stem.size(), 100);
  while (cut > 0 && cut < stem.size() && (static_cast<unsigned char>(stem[cut]) & 0xC0) == 0x80) --cut;
  stem.resize(cut);
  const std::string name = stem + "~" + sha256_hex(key).substr(0, hex_digits) + ext;
  return (p.parent_path() / name).string();
}

/// The text of one `.vc` file: np.savetxt's default layout, one value per line ("%.18e").
/// std::to_chars with a precision is specified to give printf's text in the C locale, about 4x
/// faster than snprintf (the writer thread shares the cores with the replicas); tested equal.
inline std::string vc_text(const float* f, int dim) {
  std::string s;
  s.reserve(static_cast<std::size_t>(dim) * 26);
  char buf[64];
  for (int i = 0; i < dim; ++i) {
    const auto r =
        std::to_chars(buf, buf + sizeof buf - 1, static_cast<double>(f[i]), std::chars_format::scientific, 18);
    *r.ptr = '\n';
    s.append(buf, static_cast<std::size_t>(r.ptr + 1 - buf));
  }
  return s;
}

/// Parses a `.vc` file's values.
inline std::vector<float> read_vc(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw IoError(p.string(), "cannot open");
  std::vector<float> v;
  double x;
  while (in >> x) v.push_back(static_cast<float>(x));
  return v;
}

}  // namespace vecbench
