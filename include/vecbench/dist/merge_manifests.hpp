// Merging what several processes wrote into output folders: the per-rank manifests into one
// manifest.jsonl (one line per input; complete data only; one fingerprint).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/output/fingerprint.hpp"

namespace vecbench {

/// Natural order of names: runs of digits compare as numbers ("synthetic:2" < "synthetic:10").
bool natural_less(const std::string& a, const std::string& b);

/// What merge_manifests found.
struct ManifestMerge {
  std::size_t inputs = 0;          ///< lines written (one per input)
  std::size_t ok = 0;              ///< of which "ok"
  std::size_t errors = 0;          ///< of which "error" (no ok line for the input anywhere)
  std::size_t lines = 0;           ///< manifest lines read
  std::size_t dropped = 0;         ///< "ok" lines whose output or shard file is missing or incomplete
  std::size_t other_fp = 0;        ///< lines made under another fingerprint than their folder's (left out)
  std::size_t opens = 0;           ///< times a manifest was opened to read its lines back
  std::vector<fs::path> files;     ///< manifests read
  std::string fingerprint_id;      ///< the fingerprint every merged line has ("" for folders without one)
  std::vector<std::string> notes;  ///< what the caller should tell its user (the library prints nothing)
};

/// Bounds of merge_manifests' reading back (tests make them small).
struct MergeLimits {
  std::size_t open_manifests = 64;       ///< manifests open at once (thousands of ranks stay under the fd limit)
  std::size_t window_lines = 65536;      ///< lines read back at a time, file by file, then written in merge order
  std::size_t window_bytes = 32u << 20;  ///< and their bytes at most (about)
};

/// The one fingerprint of the output folders `dirs` (empty when none has vecbench.json).
/// OutputFolderError when they differ, or when some have one and others hold manifests without:
/// merge never mixes vectors made differently.
Fingerprint common_fingerprint(const std::vector<fs::path>& dirs);

/// Combines every manifest (manifest.jsonl and manifest-rRRRR.jsonl) of the output directories
/// `dirs` into `out`/manifest.jsonl (atomically): one line per input. Lines are scanned folder by
/// folder in the order of `dirs`, each folder's manifests in manifest_files' order: a later line is
/// newer. An input's line is its newest "ok" line whose data (output file, or shard rows) is
/// complete, else its last "error" line. A newer "ok" line whose data is not complete (a run cut
/// before its shard was finished) supersedes an older finished one only when it was made from
/// other input content (its "src" differs: same_recorded_identity; a rerun that redid a changed
/// file); of the same content, the finished vector stays. Lines of another fingerprint than their
/// folder's are left out; folders of different fingerprints are refused (common_fingerprint), and
/// `out` gets their vecbench.json. Lines are copied byte for byte, except that a line of a directory
/// other than `out` gets its "output"/"shard" value rewritten relative to `out` (splice_string_values).
/// Order: the input names in `order` first, in that order, then the rest in natural order. Memory:
/// per input its name and where its lines are; the lines themselves are read back in windows
/// (MergeLimits), file by file, through at most `open_manifests` open files.
ManifestMerge merge_manifests(const std::vector<fs::path>& dirs, const fs::path& out,
                              const std::vector<std::string>& order = {}, const MergeLimits& limits = {});

}  // namespace vecbench
