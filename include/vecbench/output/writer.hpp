// Output writers: `vc` (one text file per image, np.savetxt layout as the seed wrote it),
// `npy` (one .npy per image), `shards` ([N,2048] float32 .npy shards + manifest.jsonl).
// Every file is written atomically; `manifest.jsonl` gets one line per outcome, appended only
// after the data it points to is in place; a rerun skips what is done (resume). The folder is a
// store (see OutputWriter): lock, fingerprint, repaired manifests, unique names.
// When several processes share one output directory (MPI ranks, Slurm shards), each writes its
// own `manifest-rRRRR.jsonl` and `shard-rRRRR-NNNNN.npy` files (R = rank), and resume counts
// every manifest of the directory; `vecbench merge` (or rank 0) combines them into manifest.jsonl.
#pragma once
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/files/checksum.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/files/npy.hpp"
#include "vecbench/core/run/sink.hpp"
#include "vecbench/input/image_source.hpp"
#include "vecbench/output/feature_check.hpp"
#include "vecbench/output/fingerprint.hpp"
#include "vecbench/output/input_identity.hpp"
#include "vecbench/output/manifest.hpp"
#include "vecbench/output/output_format.hpp"
#include "vecbench/output/output_lock.hpp"
#include "vecbench/output/vector_files.hpp"

namespace vecbench {

/// Why a writer stopped the run before its inputs were done.
enum class StopKind {
  none,          ///< it did not
  disk_full,     ///< writes failed for lack of room: a rerun with room does the rest (exit 2)
  broken_model,  ///< most vectors were implausible: the model or its weights are broken (exit 1)
};

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
  /// What makes the vectors (checked against OUT/vecbench.json, written into every manifest
  /// line). Empty: no identity (temporary outputs of benchmark runs).
  Fingerprint fingerprint;
  /// With another fingerprint in OUT: move the old outputs aside and redo everything (one writer only).
  bool replace_fingerprint = false;
  bool lock = true;                ///< hold OUT's advisory lock (OutputLock) for the writer's life
  int feature_dim = 0;             ///< floats per vector, for checking existing outputs (0: any, as their headers say)
  std::ostream* log = &std::cerr;  ///< notes on what was found and repaired in OUT
  bool check_features = false;     ///< an implausible vector (feature_check.hpp) is its input's error
  bool non_negative_features =
      true;                  ///< check_features: negative values are implausible (Inception's, VGG's ReLU outputs)
  bool hash_inputs = false;  ///< `--hash-inputs`: each input file's XXH3-64 joins its identity

  /// Set when the run should take no more work (abort_reason() says why): the disk is full, or
  /// most vectors are implausible (a broken model). Null: the writer never stops the run.
  std::atomic<bool>* stop = nullptr;
};

/// Writes each input's vector (or error) into an output folder that is a store: one writer at a
/// time (OutputLock), one fingerprint (vecbench.json), append-only manifests whose torn last line
/// is cut on open, every input keyed by its name (canonical path for files) and done at most once,
/// output names unique by construction. Existing outputs count as done only when their manifest
/// line has this fingerprint and the data it points at is complete; anything else is redone.
class OutputWriter : public ResultSink {
 public:
  OutputWriter(const ImageSource& src, WriterOptions opt);
  ~OutputWriter() override;
  OutputWriter(const OutputWriter&) = delete;
  OutputWriter& operator=(const OutputWriter&) = delete;

  /// Indices still to do (all of them without resume).
  std::vector<std::size_t> pending() const;
  /// Output file of input `i` (vc/npy), relative to out_dir.
  const std::string& output_name(std::size_t i) const { return names_.at(i); }

  void on_features(std::size_t index, const float* f, int dim) override;

  void on_error(std::size_t index, const std::string& message) override;

  /// Writes the last partial shard and puts the manifest on disk. Safe to call more than once.
  void finish();
  std::size_t failed() const { return failed_; }
  /// Inputs whose vector was computed but could not be written (disk full, permissions): the run
  /// counts them as failed, not ok. The first such error's text, for the summary.
  std::size_t write_failures() const { return write_failures_; }
  const std::string& first_write_error() const { return first_write_error_; }
  /// Inputs whose vector was implausible (feature_check.hpp): errors, not stored.
  std::size_t implausible() const { return implausible_; }
  /// Why the writer asked the run to stop taking work ("" when it did not).
  std::string abort_reason() const;
  /// What kind of stop that was (the exit status follows the kind, never the text).
  StopKind abort_kind() const;
  /// Inputs written with a decoder warning (lenient decoding).
  std::size_t warned() const { return warned_; }
  /// Shard files in OUT that no manifest line points at (left out of every reader).
  std::size_t orphaned_shards() const { return orphans_; }
  /// Inputs whose file changed since their newest vector was made: redone (the new line supersedes).
  std::size_t changed_inputs() const { return changed_; }
  /// The fingerprint id every line gets ("" without a fingerprint).
  const std::string& fingerprint_id() const { return fp_id_; }

 private:
  std::string ok_line(std::size_t index, nlohmann::json j);

  /// A vector that could not be written (its IoError); a full disk (ENOSPC, EDQUOT) stops the run.
  void note_write_failure(const IoError& e, std::size_t inputs = 1);

  void request_stop(StopKind kind, const std::string& why);

  /// An implausible vector is its input's error; most of 8 or more: a broken model, the run stops.
  bool plausible(std::size_t index, const float* f, int dim);

  void record_error(std::size_t index, const std::string& message);

  void flush_shard();

  /// Cuts a partial last line (a crash mid-append) off the manifests this writer may touch: its
  /// own, or every one when it is the only writer.
  void repair_manifests();

  /// Reads every manifest of OUT and lists OUT once: which inputs are done (their newest ok line
  /// of this fingerprint points at complete data made from the file as it is now: `recorded[i]`
  /// gets input i's output name), which output names belong to which input (`taken`), how many shard
  /// files no line points at, and the number the next shard gets: above every shard of this
  /// writer that a file or any line names, so that no line of an earlier run ever points at rows
  /// of a later one.
  void scan_existing(std::vector<std::string>& recorded, std::unordered_map<std::string, std::string>& taken);

  /// Output names (vc/npy): a done input keeps the name its line records; another gets its path
  /// relative to the input root (never escaping OUT), shortened with a hash when too long, and
  /// made unique with a hash of the input name when another input has (or had) that name.
  void assign_names(const std::vector<std::string>& recorded, std::unordered_map<std::string, std::string>& taken);

  /// Raises the next shard number above `name` when it is one of this writer's shards.
  void bump_shard_number(const std::string& name);

  const ImageSource& src_;
  WriterOptions opt_;
  OutputLock lock_;
  std::string fp_id_;
  std::vector<std::string> names_;
  std::vector<bool> done_;
  std::unique_ptr<ManifestAppender> manifest_;
  mutable std::mutex m_;
  std::size_t failed_ = 0;
  std::size_t write_failures_ = 0;
  std::string first_write_error_;
  std::size_t warned_ = 0;
  std::size_t orphans_ = 0;
  std::size_t changed_ = 0;
  std::size_t checked_ = 0;
  std::size_t implausible_ = 0;
  std::string abort_reason_;
  StopKind abort_kind_ = StopKind::none;
  std::vector<std::optional<InputIdentity>> ids_;
  std::vector<std::string> hashes_;  ///< --hash-inputs: per input file, its XXH3-64
  std::size_t next_shard_ = 0;
  int dim_ = 0;
  std::vector<float> rows_;
  std::vector<std::size_t> row_index_;
};

}  // namespace vecbench
