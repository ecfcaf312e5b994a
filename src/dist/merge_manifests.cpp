// Merging the output folders of several shards or ranks (include/vecbench/dist/merge_manifests.hpp).
#include "vecbench/dist/merge_manifests.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/output/manifest.hpp"
#include "vecbench/output/manifest_copy.hpp"
#include "vecbench/output/output_lock.hpp"
#include "vecbench/output/writer.hpp"

namespace vecbench {

namespace {

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
  /// The line the merged manifest gets: the ok line, else the error line (nullptr: neither).
  const MergePick* chosen() const { return ok.set ? &ok : err.set ? &err : nullptr; }
};

/// The order of the merged manifest: the names in `order` first, in that order, then the rest in
/// natural order (ties in the order first seen).
std::vector<std::uint32_t> merge_order(const std::deque<MergeInput>& inputs, const std::vector<std::string>& order) {
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
  explicit MergeScan(std::size_t open_manifests) : lines(open_manifests) {}
  std::deque<MergeInput> inputs;   ///< in the order first seen
  std::vector<fs::path> file_dir;  ///< per manifest: its folder (canonical)
  ManifestReaderCache lines;       ///< per manifest: its lines read back

  /// The text of `p`, checked to be a line of `input` (IoError when the manifest changed since).
  std::string line(const MergePick& p, const std::string& input, ManifestLine& parsed,
                   const std::vector<fs::path>& files) {
    std::string text = lines.text(p.file, p.offset, p.length);
    if (!parse_manifest_line(text, parsed) || parsed.input != input)
      throw IoError(files[p.file].string(), "its line at byte " + std::to_string(p.offset) +
                                                " is not the one scanned (the manifest changed while it was merged)");
    return text;
  }
};

/// A newer ok line `l` of `in` whose data is not complete: the finished line `in` holds stays when
/// both were made from the same input content, else `l` supersedes it (the input changed).
void unfinished_line(MergeInput& in, const ManifestLine& l, MergeScan& scan, ManifestMerge& m) {
  ++m.dropped;
  if (!in.ok.set) return;
  ManifestLine kept;
  scan.line(in.ok, in.name, kept, m.files);
  if (!same_recorded_identity(kept.src, l.src)) in.ok = {};
}

/// Reads every manifest of `dirs` (each input's newest complete ok line and last error line).
void scan_for_merge(const std::vector<fs::path>& dirs, int dim, MergeScan& scan, ManifestMerge& m) {
  std::unordered_map<std::string_view, std::size_t> by_name;  // views of scan.inputs' names
  std::error_code ec;
  for (const auto& dir : dirs) {
    const fs::path dir_c = fs::weakly_canonical(dir, ec);
    LineDataCheck complete(dir, dim);
    for (const auto& file : manifest_files(dir)) {
      struct stat st {};
      if (::stat(file.c_str(), &st) != 0)
        throw IoError(file.string(), std::string("cannot read: ") + std::strerror(errno));
      const std::uint32_t file_index = scan.lines.add(file, st.st_dev, st.st_ino);
      m.files.push_back(file);
      scan.file_dir.push_back(dir_c);
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
        if (!l.ok())
          in.err = pick;
        else if (complete(l))
          in.ok = pick;
        else
          unfinished_line(in, l, scan, m);
      });
    }
  }
}

/// An ok line of a folder other than `out`, its data pointed at from `out` (the rest of its bytes
/// as they were). `last` remembers the latest rewrite (the lines of one shard follow each other).
std::string line_from_elsewhere(const std::string& text, const fs::path& dir, const fs::path& out_c,
                                const fs::path& manifest, std::pair<std::string, std::string>& last) {
  const auto spliced = splice_string_values(text, {"output", "shard"}, [&](const std::string&, const std::string& v) {
    if (v != last.first) {
      last.second = (dir / v).lexically_normal().lexically_relative(out_c).string();
      last.first = v;
      if (!is_utf8(last.second))
        throw IoError(manifest.string(), "its data " + v + " is at a path from " + out_c.string() +
                                             " that is not UTF-8: a JSON manifest line cannot name it");
    }
    return last.second;
  });
  if (!spliced) throw IoError(manifest.string(), "a line is not a JSON object: " + text);
  return *spliced;
}

/// Writes `out`/manifest.jsonl from `scan`: each input's line read back where the scan found it
/// (and checked to be that input's), in merge_order. A window of lines is read at a time in file
/// and offset order (each manifest opened once per window however the names interleave), then
/// written in merge order.
void write_merged(const fs::path& out, const fs::path& out_c, const std::vector<std::string>& order,
                  const MergeLimits& limits, MergeScan& scan, ManifestMerge& m) {
  const auto idx = merge_order(scan.inputs, order);
  auto pick = [&](std::size_t i) { return scan.inputs[idx[i]].chosen(); };
  std::pair<std::string, std::string> last;  // a data path and its rewrite
  std::uint32_t last_file = UINT32_MAX;
  ManifestLine again;
  std::vector<std::size_t> reads;
  std::vector<std::string> texts;
  atomic_write_with(out / "manifest.jsonl", [&](std::FILE* f) {
    for (std::size_t w0 = 0, w1 = 0; w0 < idx.size(); w0 = w1) {
      reads.clear();
      for (std::size_t bytes = 0;
           w1 < idx.size() && (w1 == w0 || (w1 - w0 < limits.window_lines && bytes < limits.window_bytes)); ++w1)
        if (const MergePick* p = pick(w1)) reads.push_back(w1), bytes += p->length;
      std::sort(reads.begin(), reads.end(), [&](std::size_t a, std::size_t b) {
        return std::make_pair(pick(a)->file, pick(a)->offset) < std::make_pair(pick(b)->file, pick(b)->offset);
      });
      texts.assign(w1 - w0, std::string());
      for (const std::size_t r : reads) {
        const MergeInput& in = scan.inputs[idx[r]];
        const MergePick& p = *in.chosen();
        std::string text = scan.line(p, in.name, again, m.files);
        if (&p == &in.ok && scan.file_dir[p.file] != out_c) {  // error lines name no data
          if (p.file != last_file) last = {}, last_file = p.file;
          text = line_from_elsewhere(text, scan.file_dir[p.file], out_c, m.files[p.file], last);
        }
        texts[r - w0] = std::move(text) + '\n';
      }
      for (std::size_t i = w0; i < w1; ++i) {
        const MergeInput& in = scan.inputs[idx[i]];
        const MergePick* p = in.chosen();
        if (!p) continue;  // only ok lines with missing data
        const std::string& text = texts[i - w0];
        if (std::fwrite(text.data(), 1, text.size(), f) != text.size()) return false;
        ++(p == &in.ok ? m.ok : m.errors);
        ++m.inputs;
      }
    }
    return true;
  });
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
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

Fingerprint common_fingerprint(const std::vector<fs::path>& dirs) {
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

ManifestMerge merge_manifests(const std::vector<fs::path>& dirs, const fs::path& out,
                              const std::vector<std::string>& order, const MergeLimits& limits) {
  ManifestMerge m;
  std::error_code ec;
  for (const auto& dir : dirs)
    if (!fs::is_directory(dir, ec)) throw IoError(dir.string(), "not a directory");
  const Fingerprint fp = common_fingerprint(dirs);
  m.fingerprint_id = fp.empty() ? "" : fp.id();
  const int dim = fp.empty() ? 0 : fp.fields.value("feature_dim", 0);
  const fs::path out_c = fs::weakly_canonical(out, ec);
  MergeScan scan(limits.open_manifests);
  scan_for_merge(dirs, dim, scan, m);
  if (!fp.empty()) {
    std::ostringstream said;  // what opening `out`'s identity reports, for the caller to print
    open_store_identity(out, fp, false, said);
    std::istringstream lines(said.str());
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) m.notes.push_back(line);
  }
  write_merged(out, out_c, order, limits, scan, m);
  m.opens = scan.lines.opens();
  return m;
}

}  // namespace vecbench
