// Output writers: `vc` (one text file per image, np.savetxt layout as the seed wrote it),
// `npy` (one .npy per image), `shards` ([N,2048] float32 .npy shards + manifest.jsonl).
// Every file is written atomically; `manifest.jsonl` gets one line per outcome, appended only
// after the data it points to is in place; a rerun skips what is done (resume).
// When several processes share one output directory (MPI ranks, Slurm shards), each writes its
// own `manifest-rRRRR.jsonl` and `shard-rRRRR-NNNNN.npy` files (R = rank), and resume counts
// every manifest of the directory; `vecbench merge` (or rank 0) combines them into manifest.jsonl.
#pragma once
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/fs_util.hpp"
#include "vecbench/image_source.hpp"
#include "vecbench/npy.hpp"
#include "vecbench/sink.hpp"

namespace vecbench {

enum class OutputFormat { vc, npy, shards, none };

inline OutputFormat parse_output_format(const std::string& s) {
  if (s == "vc") return OutputFormat::vc;
  if (s == "npy") return OutputFormat::npy;
  if (s == "shards") return OutputFormat::shards;
  if (s == "none") return OutputFormat::none;
  throw ConfigError("format", "unknown output format '" + s + "' (use vc, npy, shards or none)");
}

/// Writer settings.
struct WriterOptions {
  OutputFormat format = OutputFormat::npy;  ///< what to write
  fs::path out_dir;                         ///< output directory (created)
  std::size_t shard_rows = 1024;            ///< shards: rows per shard file
  bool resume = true;                       ///< skip inputs whose output is complete
  bool quiet = false;                       ///< do not print per-image errors on stderr
  /// >= 0: one of several processes writing to out_dir: per-rank manifest-rRRRR.jsonl and
  /// shard-rRRRR-NNNNN.npy files. -1: the only writer (manifest.jsonl, shard-NNNNN.npy).
  int rank = -1;
  /// Leftover temp files of killed writes are removed only when older than this (seconds):
  /// other processes sharing out_dir may be writing theirs right now. < 0: not removed.
  double stale_temp_age_s = 0;
};

/// Parses `s` as exactly `prefix` DIGITS `suffix`; returns the number, or -1. With `rest`,
/// the suffix may be followed by more text, which goes there.
inline long parse_numbered(const std::string& s, const std::string& prefix, const std::string& suffix,
                           std::string* rest = nullptr) {
  if (s.compare(0, prefix.size(), prefix) != 0) return -1;
  std::size_t i = prefix.size(), j = i;
  while (j < s.size() && j - i < 12 && s[j] >= '0' && s[j] <= '9') ++j;
  if (j == i || s.compare(j, suffix.size(), suffix) != 0) return -1;
  const std::size_t end = j + suffix.size();
  if (rest)
    *rest = s.substr(end);
  else if (end != s.size())
    return -1;
  return std::stol(s.substr(i, j - i));
}

/// The manifest files of an output directory: manifest.jsonl (when there), then every
/// per-rank manifest-rRRRR.jsonl, by rank.
inline std::vector<fs::path> manifest_files(const fs::path& dir) {
  std::vector<fs::path> v;
  std::error_code ec;
  if (fs::exists(dir / "manifest.jsonl", ec)) v.push_back(dir / "manifest.jsonl");
  std::vector<fs::path> ranks;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (parse_numbered(e.path().filename().string(), "manifest-r", ".jsonl") >= 0) ranks.push_back(e.path());
  }
  std::sort(ranks.begin(), ranks.end());
  v.insert(v.end(), ranks.begin(), ranks.end());
  return v;
}

/// The manifest file name of writer `rank` (-1: the only writer).
inline std::string manifest_name(int rank) {
  if (rank < 0) return "manifest.jsonl";
  char b[40];
  std::snprintf(b, sizeof b, "manifest-r%04d.jsonl", rank);
  return b;
}

/// The text of one `.vc` file: np.savetxt's default layout, one value per line ("%.18e").
inline std::string vc_text(const float* f, int dim) {
  std::string s;
  s.reserve(static_cast<std::size_t>(dim) * 26);
  char buf[40];
  for (int i = 0; i < dim; ++i) {
    const int n = std::snprintf(buf, sizeof buf, "%.18e\n", static_cast<double>(f[i]));
    s.append(buf, static_cast<std::size_t>(n));
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

class OutputWriter : public ResultSink {
 public:
  OutputWriter(const ImageSource& src, WriterOptions opt) : src_(src), opt_(std::move(opt)) {
    if (opt_.format == OutputFormat::none) return;
    std::error_code ec;
    fs::create_directories(opt_.out_dir, ec);
    if (ec) throw IoError(opt_.out_dir.string(), "cannot create output directory: " + ec.message());
    if (opt_.stale_temp_age_s >= 0) remove_stale_temp_files(opt_.out_dir, opt_.stale_temp_age_s);
    // Output names: relative to the input root, never escaping out_dir; collisions get ".<index>".
    const std::string ext = opt_.format == OutputFormat::vc ? ".vc" : ".npy";
    std::set<std::string> taken;
    names_.resize(src_.size());
    for (std::size_t i = 0; i < src_.size(); ++i) {
      std::string rel = safe_relative_name(src_.name(i), src_.root()).string();
      if (!taken.insert(rel).second) rel += "." + std::to_string(i);
      taken.insert(rel);
      names_[i] = rel + ext;
    }
    done_.assign(src_.size(), false);
    if (opt_.format == OutputFormat::shards) scan_shard_numbers();
    if (opt_.resume) scan_done();
    manifest_path_ = opt_.out_dir / manifest_name(opt_.rank);
    manifest_ = std::fopen(manifest_path_.c_str(), "ab");
    if (!manifest_) throw IoError(manifest_path_.string(), "cannot open for append");
  }
  ~OutputWriter() override {
    try {
      finish();
    } catch (...) {
    }
    if (manifest_) std::fclose(manifest_);
  }
  OutputWriter(const OutputWriter&) = delete;
  OutputWriter& operator=(const OutputWriter&) = delete;

  /// Indices still to do (all of them without resume).
  std::vector<std::size_t> pending() const {
    std::vector<std::size_t> v;
    for (std::size_t i = 0; i < src_.size(); ++i)
      if (done_.empty() || !done_[i]) v.push_back(i);
    return v;
  }
  std::size_t already_done() const { return src_.size() - pending().size(); }
  /// Output file of input `i` (vc/npy), relative to out_dir.
  const std::string& output_name(std::size_t i) const { return names_.at(i); }

  void on_features(std::size_t index, const float* f, int dim) override {
    std::lock_guard<std::mutex> lk(m_);
    switch (opt_.format) {
      case OutputFormat::none:
        return;
      case OutputFormat::vc:
        atomic_write(opt_.out_dir / names_[index], vc_text(f, dim));
        break;
      case OutputFormat::npy:
        npy::save_f32(opt_.out_dir / names_[index], f, {static_cast<std::size_t>(dim)});
        break;
      case OutputFormat::shards:
        dim_ = dim;
        rows_.insert(rows_.end(), f, f + dim);
        row_index_.push_back(index);
        if (row_index_.size() >= opt_.shard_rows) flush_shard();
        return;
    }
    append_manifest({{"input", src_.name(index)}, {"output", names_[index]}, {"status", "ok"}});
  }

  void on_error(std::size_t index, const std::string& message) override {
    std::lock_guard<std::mutex> lk(m_);
    ++failed_;
    if (!opt_.quiet)
      std::cerr << ("vecbench: error: " + message + "\n") << std::flush;  // one write: ranks share stderr
    if (opt_.format == OutputFormat::none) return;
    append_manifest({{"input", src_.name(index)}, {"status", "error"}, {"error", message}});
  }

  /// Writes the last partial shard and puts the manifest on disk. Safe to call more than once.
  void finish() {
    std::lock_guard<std::mutex> lk(m_);
    if (opt_.format == OutputFormat::shards && !row_index_.empty()) flush_shard();
    if (manifest_) {
      std::fflush(manifest_);
      if (opt_.rank >= 0) ::fsync(::fileno(manifest_));  // another node may read it next (NFS)
    }
  }
  std::size_t failed() const { return failed_; }

 private:
  void append_manifest(const nlohmann::json& j) {
    const std::string line = j.dump() + "\n";
    if (std::fwrite(line.data(), 1, line.size(), manifest_) != line.size() || std::fflush(manifest_) != 0)
      throw IoError(manifest_path_.string(), "write failed");
  }

  void flush_shard() {
    char name[48];
    if (opt_.rank < 0)
      std::snprintf(name, sizeof name, "shard-%05zu.npy", next_shard_++);
    else
      std::snprintf(name, sizeof name, "shard-r%04d-%05zu.npy", opt_.rank, next_shard_++);
    npy::save_f32(opt_.out_dir / name, rows_.data(), {row_index_.size(), static_cast<std::size_t>(dim_)});
    std::string lines;
    for (std::size_t r = 0; r < row_index_.size(); ++r)
      lines +=
          nlohmann::json{{"input", src_.name(row_index_[r])}, {"shard", name}, {"row", r}, {"status", "ok"}}.dump() +
          "\n";
    if (std::fwrite(lines.data(), 1, lines.size(), manifest_) != lines.size() || std::fflush(manifest_) != 0)
      throw IoError(manifest_path_.string(), "write failed");
    rows_.clear();
    row_index_.clear();
  }

  /// The number of a shard file this writer names ("shard-NNNNN.npy", or
  /// "shard-rRRRR-NNNNN.npy" for rank R), or -1 for any other name.
  long own_shard_number(const std::string& name) const {
    if (opt_.rank < 0) return parse_numbered(name, "shard-", ".npy");
    std::string rest;
    if (parse_numbered(name, "shard-r", "-", &rest) != opt_.rank) return -1;
    return parse_numbered(rest, "", ".npy");
  }

  /// New shard files get numbers above every existing one of this writer (files and manifest
  /// lines), so that no line of an earlier run ever points at rows of a later one.
  void scan_shard_numbers() {
    auto bump = [&](const std::string& name) {
      const long num = own_shard_number(name);
      if (num >= 0 && static_cast<std::size_t>(num) + 1 > next_shard_) next_shard_ = static_cast<std::size_t>(num) + 1;
    };
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(opt_.out_dir, ec)) bump(e.path().filename().string());
    std::ifstream in(opt_.out_dir / manifest_name(opt_.rank));
    std::string line;
    while (std::getline(in, line)) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.is_object() && j.contains("shard") && j["shard"].is_string())
        bump(j["shard"].get<std::string>());
    }
  }

  /// Marks inputs whose output is complete: vc/npy by the output file (renamed into place only
  /// when complete), shards by lines of any manifest of the directory (any rank's) whose shard
  /// file exists.
  void scan_done() {
    if (opt_.format == OutputFormat::vc || opt_.format == OutputFormat::npy) {
      std::error_code ec;
      for (std::size_t i = 0; i < names_.size(); ++i) done_[i] = fs::exists(opt_.out_dir / names_[i], ec);
      return;
    }
    std::map<std::string, std::size_t> by_name;
    for (std::size_t i = 0; i < src_.size(); ++i) by_name.emplace(src_.name(i), i);
    std::map<std::string, bool> shard_exists;
    std::error_code ec;
    for (const auto& file : manifest_files(opt_.out_dir)) {
      std::ifstream in(file);
      std::string line;
      while (std::getline(in, line)) {
        const auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object()) continue;  // a line cut by a kill
        if (!j.contains("shard") || !j["shard"].is_string() || j.value("status", "") != "ok") continue;
        const std::string shard = j["shard"].get<std::string>();
        auto se = shard_exists.find(shard);
        if (se == shard_exists.end()) se = shard_exists.emplace(shard, fs::exists(opt_.out_dir / shard, ec)).first;
        if (!se->second) continue;
        auto it = by_name.find(j.value("input", ""));
        if (it != by_name.end()) done_[it->second] = true;
      }
    }
  }

  const ImageSource& src_;
  WriterOptions opt_;
  std::vector<std::string> names_;
  std::vector<bool> done_;
  fs::path manifest_path_;
  std::FILE* manifest_ = nullptr;
  std::mutex m_;
  std::size_t failed_ = 0;
  std::size_t next_shard_ = 0;
  int dim_ = 0;
  std::vector<float> rows_;
  std::vector<std::size_t> row_index_;
};

}  // namespace vecbench
