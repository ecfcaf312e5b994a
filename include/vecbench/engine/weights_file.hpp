// The oneDNN engine's weights in a plain file (batch norm folded, float32), so that a start-up
// with that engine reads them in milliseconds instead of loading and walking the TorchScript
// module (about half a second plus a second copy of every weight). The first onednn run of a
// model writes the file into the weights cache; later runs of the same weights read it.
// The file is named after the export's weight sha256 (vecbench_meta.json) and the model
// file's size, and holds that sha256 in its header, checked on read. No LibTorch here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "vecbench/engine/onednn_inception.hpp"

namespace vecbench {

/// The folder of weights files: $VECBENCH_WEIGHTS_DIR, else the cache folder's weights/
/// (core/fs_util.hpp cache_dir). "off" (VECBENCH_WEIGHTS_DIR=off): no weights files.
std::string weights_cache_dir();

/// How many bytes of weights files the cache keeps: $VECBENCH_WEIGHTS_CACHE_MB megabytes, else
/// 1024 MB (about 11 files of the default model's 87 MB).
std::uintmax_t weights_cache_budget();

/// Removes the least recently used weights files (`*.onednn`) of `dir`, by modification time (a
/// load touches its file), until the rest hold at most `budget` bytes; never `keep` (the file just
/// written). Each export of a model (every build of the default one) has its own file, so without
/// this the cache grows by one file per export. A process that has a removed file mapped keeps
/// reading it. Returns how many files it removed.
std::size_t prune_weights_cache(const std::string& dir, const std::string& keep, std::uintmax_t budget);

/// The weights file of a model whose export metadata says `weight_sha256` and whose file has
/// `model_bytes` bytes ("" when the cache is off or the sha256 is unknown).
std::string weights_file_path(const std::string& weight_sha256, std::uintmax_t model_bytes);

/// Writes `w` to `path` atomically (temp file + rename), with `weight_sha256` in its header,
/// padded with spaces so that the floats start at a 64-byte boundary.
void save_inception_weights(const InceptionWeights& w, const std::string& path, const std::string& weight_sha256);

/// The weights in `path` when it exists, is complete, holds `weight_sha256` and its payload's
/// checksum (XXH3-64) matches; null otherwise, with `why` saying what did not check out ("" when
/// there is no file). `source` becomes the weights' source (the model file, for error messages).
/// The file is mapped read-only and the layers' floats are ranges of it (LayerFloats::mapped; the
/// mapping lives as long as the weights): nothing is copied and no fresh page is touched, and
/// processes on one machine share the page cache's copy. Writers replace the file by rename, so
/// a mapped file never changes under a run. A file whose floats are not 4-byte aligned (written
/// before save_inception_weights padded the header) is copied out instead and written again.
std::shared_ptr<const InceptionWeights> load_inception_weights(const std::string& path,
                                                               const std::string& weight_sha256,
                                                               const std::string& source, std::string* why = nullptr);

}  // namespace vecbench
