// The output writer's store logic (output/writer.hpp), compiled once.
#include "vecbench/output/writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace vecbench {

OutputWriter::OutputWriter(const ImageSource& src, WriterOptions opt) : src_(src), opt_(std::move(opt)) {
  if (opt_.format == OutputFormat::none) return;
  std::error_code ec;
  fs::create_directories(opt_.out_dir, ec);
  if (ec) throw IoError(opt_.out_dir.string(), "cannot create output directory: " + ec.message());
  if (opt_.lock) lock_ = OutputLock(opt_.out_dir, opt_.rank);
  if (!opt_.fingerprint.empty()) {
    if (opt_.replace_fingerprint && opt_.rank >= 0)
      throw ConfigError("--replace-fingerprint",
                        "needs the only writer: run it once without MPI ranks or --shard-index shards");
    open_store_identity(opt_.out_dir, opt_.fingerprint, opt_.replace_fingerprint, *opt_.log,
                        opt_.lock && opt_.rank < 0);
    fp_id_ = opt_.fingerprint.id();
  }
  if (opt_.stale_temp_age_s >= 0) remove_stale_temp_files(opt_.out_dir, opt_.stale_temp_age_s);
  repair_manifests();
  done_.assign(src_.size(), false);
  // Before any input is read: a file rewritten later is found changed on the next run.
  ids_.resize(src_.size());
  if (src_.kind() == SourceKind::files)
    for (std::size_t i = 0; i < src_.size(); ++i) ids_[i] = stat_identity(src_.name(i));
  if (opt_.hash_inputs && src_.kind() == SourceKind::files) {
    hashes_.resize(src_.size());
    for (std::size_t i = 0; i < src_.size(); ++i) hashes_[i] = file_xxh3(src_.name(i));
  }
  std::vector<std::string> recorded(src_.size());      // per input: the output name of its complete ok line
  std::unordered_map<std::string, std::string> taken;  // output name -> input it belongs to
  scan_existing(recorded, taken);
  assign_names(recorded, taken);
  manifest_ = std::make_unique<ManifestAppender>(opt_.out_dir / manifest_name(opt_.rank));
}

OutputWriter::~OutputWriter() {
  try {
    finish();
  } catch (...) {
  }
}

std::vector<std::size_t> OutputWriter::pending() const {
  std::vector<std::size_t> v;
  for (std::size_t i = 0; i < src_.size(); ++i)
    if (done_.empty() || !done_[i]) v.push_back(i);
  return v;
}

void OutputWriter::on_features(std::size_t index, const float* f, int dim) {
  std::lock_guard<std::mutex> lk(m_);
  if (opt_.check_features && !plausible(index, f, dim)) return;
  switch (opt_.format) {
    case OutputFormat::none:
      return;
    case OutputFormat::vc:
    case OutputFormat::npy:
      try {
        if (opt_.format == OutputFormat::vc)
          atomic_write(opt_.out_dir / names_[index], vc_text(f, dim));
        else
          npy::save_f32(opt_.out_dir / names_[index], f, {static_cast<std::size_t>(dim)});
      } catch (const IoError& e) {  // this input's file alone: the run goes on
        note_write_failure(e);
        record_error(index, src_.name(index) + ": cannot write its output: " + e.what());
        return;
      }
      break;
    case OutputFormat::shards:
      dim_ = dim;
      rows_.insert(rows_.end(), f, f + dim);
      row_index_.push_back(index);
      if (row_index_.size() >= opt_.shard_rows) flush_shard();
      return;
  }
  manifest_->append(ok_line(index, {{"output", names_[index]}, {"xxh3", vector_xxh3(f, dim)}}));
}

void OutputWriter::on_error(std::size_t index, const std::string& message) {
  std::lock_guard<std::mutex> lk(m_);
  record_error(index, message);
}

void OutputWriter::finish() {
  std::lock_guard<std::mutex> lk(m_);
  if (opt_.format == OutputFormat::shards && !row_index_.empty()) flush_shard();
  if (manifest_) manifest_->sync();
}

std::string OutputWriter::abort_reason() const {
  std::lock_guard<std::mutex> lk(m_);
  return abort_reason_;
}

StopKind OutputWriter::abort_kind() const {
  std::lock_guard<std::mutex> lk(m_);
  return abort_kind_;
}

std::string OutputWriter::ok_line(std::size_t index, nlohmann::json j) {
  set_manifest_input(j, src_.name(index));
  j["status"] = enum_name(InputStatus::ok);
  const std::string w = src_.warning(index);
  if (!w.empty()) {
    j["warning"] = w;
    ++warned_;
    if (!opt_.quiet) std::cerr << ("vecbench: warning: " + src_.name(index) + ": " + w + "\n") << std::flush;
  }
  if (!fp_id_.empty()) j["fp"] = fp_id_;
  if (ids_[index]) j["src"] = identity_json(*ids_[index]);
  if (ids_[index] && !hashes_.empty() && !hashes_[index].empty()) j["src"]["xxh3"] = hashes_[index];
  return manifest_text(j);
}

void OutputWriter::note_write_failure(const IoError& e, std::size_t inputs) {
  const std::string what = e.what();
  write_failures_ += inputs;
  if (first_write_error_.empty()) first_write_error_ = what;
  // A full disk fails every later write too: no more decoding and computing for nothing.
  if (e.error_number == ENOSPC || e.error_number == EDQUOT)
    request_stop(StopKind::disk_full, "the disk is full (" + what + ")");
}

void OutputWriter::request_stop(StopKind kind, const std::string& why) {
  if (abort_kind_ != StopKind::none) return;
  abort_kind_ = kind;
  abort_reason_ = why;
  if (opt_.stop) opt_.stop->store(true);
}

bool OutputWriter::plausible(std::size_t index, const float* f, int dim) {
  ++checked_;
  const std::string bad = implausible_features(f, dim, opt_.non_negative_features);
  if (bad.empty()) return true;
  ++implausible_;
  record_error(index, src_.name(index) + ": implausible feature vector (" + bad +
                          "): the model or its weights are likely broken; not stored");
  if (checked_ >= 8 && implausible_ * 2 > checked_)
    request_stop(StopKind::broken_model,
                 std::to_string(implausible_) + " of " + std::to_string(checked_) +
                     " feature vectors implausible: the model or its weights file is broken (check it with "
                     "`vecbench model info --model FILE`, or export it again)");
  return false;
}

void OutputWriter::record_error(std::size_t index, const std::string& message) {
  ++failed_;
  if (!opt_.quiet) std::cerr << ("vecbench: error: " + message + "\n") << std::flush;  // one write: ranks share stderr
  if (opt_.format == OutputFormat::none) return;
  nlohmann::json j = {{"status", enum_name(InputStatus::error)}, {"error", message}};
  set_manifest_input(j, src_.name(index));
  if (!fp_id_.empty()) j["fp"] = fp_id_;
  manifest_->append(manifest_text(j));
}

void OutputWriter::flush_shard() {
  char name[48];
  if (opt_.rank < 0)
    std::snprintf(name, sizeof name, "shard-%05zu.npy", next_shard_++);
  else
    std::snprintf(name, sizeof name, "shard-r%04d-%05zu.npy", opt_.rank, next_shard_++);
  try {
    npy::save_f32(opt_.out_dir / name, rows_.data(), {row_index_.size(), static_cast<std::size_t>(dim_)});
  } catch (const IoError& e) {  // the shard's inputs fail, each with the cause; the run goes on
    note_write_failure(e, row_index_.size());
    for (std::size_t i : row_index_) record_error(i, src_.name(i) + ": cannot write its shard: " + e.what());
    rows_.clear();
    row_index_.clear();
    return;
  }
  std::string lines;
  for (std::size_t r = 0; r < row_index_.size(); ++r)
    lines +=
        ok_line(row_index_[r], {{"shard", name}, {"row", r}, {"xxh3", vector_xxh3(rows_.data() + r * dim_, dim_)}});
  manifest_->append(lines);  // one write for the shard's lines, after the shard is in place
  rows_.clear();
  row_index_.clear();
}

void OutputWriter::repair_manifests() {
  std::vector<fs::path> files;
  if (opt_.rank < 0)
    files = manifest_files(opt_.out_dir);
  else
    files = {opt_.out_dir / manifest_name(opt_.rank)};
  for (const auto& f : files)
    if (const auto cut = repair_manifest_tail(f))
      *opt_.log << "vecbench: " << f.string() << ": cut a partial last line (" << cut
                << " bytes) left by an interrupted run\n";
}

void OutputWriter::scan_existing(std::vector<std::string>& recorded,
                                 std::unordered_map<std::string, std::string>& taken) {
  std::unordered_map<std::string, std::size_t> by_name(src_.size());
  for (std::size_t i = 0; i < src_.size(); ++i) by_name.emplace(src_.name(i), i);
  LineDataCheck complete(opt_.out_dir, opt_.feature_dim);
  std::set<std::string> referenced;
  std::vector<char> changed(src_.size(), 0);
  for (const auto& file : manifest_files(opt_.out_dir)) {
    for_each_manifest_line(file, [&](const ManifestLine& l) {
      if (l.shard && referenced.insert(*l.shard).second) bump_shard_number(*l.shard);
      if (l.output) taken.emplace(*l.output, l.input);
      if (!opt_.resume || !l.ok()) return;
      if (!fp_id_.empty() && l.fp != fp_id_) return;
      const auto it = by_name.find(l.input);
      if (it == by_name.end()) return;
      const std::size_t i = it->second;
      // The newest ok line decides: a line appended after an input was redone supersedes the old.
      const bool same = identity_unchanged(l.src, ids_[i], hashes_.empty() ? std::string() : hashes_[i]) &&
                        !input_newer_than_its_data(l.src, l.data_file(), opt_.out_dir.string(), ids_[i]);
      changed[i] = !same;
      done_[i] = same && complete(l);
      recorded[i] = done_[i] && l.output ? *l.output : std::string();
    });
  }
  changed_ = static_cast<std::size_t>(std::count(changed.begin(), changed.end(), 1));
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(opt_.out_dir, ec)) {
    const std::string n = e.path().filename().string();
    bump_shard_number(n);
    // Orphans only for the one writer: other processes may be between a shard and its lines now.
    if (opt_.rank < 0 && is_shard_name(n) && !referenced.count(n)) ++orphans_;
  }
  if (orphans_)
    *opt_.log << "vecbench: " << opt_.out_dir.string() << ": " << orphans_
              << " shard file(s) that no manifest line points at (a run killed between a shard and its lines): "
                 "left out, and their inputs are redone\n";
}

void OutputWriter::assign_names(const std::vector<std::string>& recorded,
                                std::unordered_map<std::string, std::string>& taken) {
  names_.resize(src_.size());
  if (opt_.format != OutputFormat::vc && opt_.format != OutputFormat::npy) return;
  const std::string ext = opt_.format == OutputFormat::vc ? ".vc" : ".npy";
  for (std::size_t i = 0; i < src_.size(); ++i) {
    if (!recorded[i].empty() && done_[i]) {
      names_[i] = recorded[i];
      taken[recorded[i]] = src_.name(i);
    }
  }
  std::set<std::string> seen_inputs;
  for (std::size_t i = 0; i < src_.size(); ++i) {
    if (!names_[i].empty()) continue;
    const std::string name = src_.name(i);
    // The same name twice in one source (not from a file list, which is deduplicated): its own key.
    const std::string key = seen_inputs.insert(name).second ? name : name + "#" + std::to_string(i);
    // A name that is not valid UTF-8 (Linux allows any bytes) gets an ASCII-safe one with a hash.
    const std::string rel = safe_relative_name(name, src_.root()).string(), clean = utf8_safe(rel);
    const std::string plain = clean + ext;
    auto taken_by_other = [&](const std::string& n) {
      const auto owner = taken.find(n);
      return owner != taken.end() && owner->second != key;
    };
    std::string n = plain;
    if (taken_by_other(n) || clean != rel || fs::path(n).filename().string().size() > kMaxOutputNameBytes) {
      n = hashed_output_name(plain, ext, key);
      if (taken_by_other(n)) n = hashed_output_name(plain, ext, key, 64);
    }
    taken[n] = key;
    names_[i] = n;
  }
}

void OutputWriter::bump_shard_number(const std::string& name) {
  const long num = shard_number_of(name, opt_.rank);
  if (num >= 0 && static_cast<std::size_t>(num) + 1 > next_shard_) next_shard_ = static_cast<std::size_t>(num) + 1;
}

}  // namespace vecbench
