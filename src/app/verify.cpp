// `vecbench verify OUT`: every stored vector re-read against its manifest line (README "Output
// folder"): missing, truncated and corrupted data named by input and file; `--repair` moves the
// files that hold it aside so that the next run redoes their inputs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "vecbench/app/commands.hpp"
#include "vecbench/core/npy.hpp"
#include "vecbench/output/checksum.hpp"
#include "vecbench/output/fingerprint.hpp"
#include "vecbench/output/manifest.hpp"
#include "vecbench/output/output_lock.hpp"
#include "vecbench/output/writer.hpp"

namespace vecbench {
namespace {

/// The newest ok line of each input of OUT's fingerprint (the line a rerun and a reader go by).
struct Entry {
  std::string input;  ///< byte-exact
  std::string file;   ///< the output or shard, relative to OUT
  long row = -1;      ///< shard row; -1 for a vector file
  std::string xxh3;   ///< "" for lines written before checksums
};

std::vector<Entry> newest_ok_lines(const fs::path& dir, const std::string& fp_id) {
  std::map<std::string, Entry> by_input;
  for (const auto& m : manifest_files(dir))
    for_each_manifest_line(m, [&](const nlohmann::json& j) {
      if (j.value("status", "") != "ok" || (!fp_id.empty() && j.value("fp", "") != fp_id)) return;
      Entry e;
      e.input = manifest_input(j);
      e.xxh3 = j.value("xxh3", "");
      if (j.contains("output") && j["output"].is_string()) {
        e.file = j["output"].get<std::string>();
      } else if (j.contains("shard") && j["shard"].is_string() && j.contains("row") && j["row"].is_number_integer()) {
        e.file = j["shard"].get<std::string>();
        e.row = j["row"].get<long>();
      } else {
        e.file = "(no output named)";
      }
      by_input[e.input] = e;
    });
  std::vector<Entry> v;
  for (auto& kv : by_input) v.push_back(std::move(kv.second));
  std::sort(v.begin(), v.end(),
            [](const Entry& a, const Entry& b) { return std::tie(a.file, a.row) < std::tie(b.file, b.row); });
  return v;
}

/// The vectors of a file of OUT: one for a .vc or .npy vector file, rows for a shard; empty
/// with `why` set when it is missing or not a complete float32 file of `dim` columns.
std::vector<float> read_vectors(const fs::path& p, int dim, std::string& why) {
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

}  // namespace

int cmd_verify(const std::string& out, bool repair, double progress_s) {
  const fs::path dir(out);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw IoError(out, "not a directory");
  OutputLock lock(dir, -1);  // no writer may change OUT meanwhile (repair moves files)
  const Fingerprint fp = read_store_fingerprint(dir);
  const int dim = fp.empty() ? 0 : fp.fields.value("feature_dim", 0);
  const auto entries = newest_ok_lines(dir, fp.empty() ? "" : fp.id());
  std::size_t checked = 0, unchecked = 0, bad = 0;
  std::set<std::string> bad_files;
  std::string loaded_file, loaded_why;
  std::vector<float> loaded;
  auto last = std::chrono::steady_clock::now();
  for (const Entry& e : entries) {
    if (e.file != loaded_file) {  // entries are sorted by file: each file is read once
      loaded_file = e.file;
      loaded_why.clear();
      loaded = read_vectors(dir / e.file, dim, loaded_why);
    }
    const int d = dim > 0 ? dim : static_cast<int>(loaded.size());
    const std::size_t at = e.row < 0 ? 0 : static_cast<std::size_t>(e.row) * static_cast<std::size_t>(d);
    std::string why = loaded_why;
    if (why.empty() && (d == 0 || at + static_cast<std::size_t>(d) > loaded.size()))
      why = "row " + std::to_string(e.row) + " is not in it";
    if (why.empty() && !e.xxh3.empty() && vector_xxh3(loaded.data() + at, d) != e.xxh3)
      why = "corrupted (checksum " + vector_xxh3(loaded.data() + at, d) + ", manifest says " + e.xxh3 + ")";
    ++checked;
    if (why.empty() && e.xxh3.empty()) ++unchecked;
    if (!why.empty()) {
      ++bad;
      bad_files.insert(e.file);
      std::cout << "BAD " << e.input << ": " << e.file << (e.row >= 0 ? " row " + std::to_string(e.row) : "") << ": "
                << why << "\n";
    }
    if (progress_s > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - last).count() > progress_s) {
      last = std::chrono::steady_clock::now();
      std::cerr << "vecbench verify: " << checked << "/" << entries.size() << " checked, " << bad << " bad\n";
    }
  }
  std::cout << "verify " << out << ": " << checked << " vectors checked, " << bad << " bad";
  if (unchecked) std::cout << ", " << unchecked << " complete but written before checksums (size checked only)";
  std::cout << "\n";
  if (repair && !bad_files.empty()) {
    const fs::path aside = dir / ("corrupt-" + utc_stamp());
    for (const auto& f : bad_files) {
      const fs::path rel = fs::path(f).lexically_normal();
      if (rel.empty() || rel.is_absolute() || *rel.begin() == ".." || !fs::exists(dir / rel, ec)) continue;
      fs::create_directories((aside / rel).parent_path());
      fs::rename(dir / rel, aside / rel, ec);
      if (ec) throw IoError((dir / rel).string(), "cannot move it aside: " + ec.message());
    }
    sync_directory(dir);
    std::cout << "repair: " << bad_files.size() << " files moved to " << aside.string() << "; the next vectorize into "
              << out << " redoes their inputs\n";
  }
  return bad > 0 ? kExitSomeInputsFailed : 0;
}

}  // namespace vecbench
