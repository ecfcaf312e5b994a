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
/// (core/files/fs_util.hpp cache_dir). "off" (VECBENCH_WEIGHTS_DIR=off): no weights files.
std::string weights_cache_dir();

/// How many bytes of weights files the cache keeps: $VECBENCH_WEIGHTS_CACHE_MB megabytes, else
/// 1024 MB (about 4 exports of the default model: 87 MB of weights and 155 MB packed for AVX-512).
std::uintmax_t weights_cache_budget();

/// Removes the least recently used weights and packed-weights files (`*.onednn`) of `dir`, by
/// modification time (a load touches its file), until the rest hold at most `budget` bytes;
/// never `keep` (the file just written) nor its export's weights file and packed-weights file for
/// this ISA and oneDNN (packed_file_path). Each export of a model (every build of the default one)
/// has its own files, so without this the cache grows by one set per export. Also removes the
/// temp files of cache writes killed mid-way, once 10 minutes old. A process that has a removed
/// file mapped keeps reading it. Returns how many cache files it removed.
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

/// The packed-weights file beside weights file `weights_path` (weights_file_path; "" for ""):
/// every layer's weights as this CPU's oneDNN primitives and vecbench's Winograd kernels take
/// them (oneDNN's blocked layouts, the transformed Winograd filters), so that a start-up neither
/// reorders nor transforms them (on 2 Zen 5 cores ~95 ms of a start, and ~150 MB of fresh
/// pages; results/whole-job/startup-packed-20261203.md). Named for the ISA oneDNN runs
/// (`ONEDNN_MAX_CPU_ISA` included; dnnl::cpu_isa's value) and the oneDNN version: the weights
/// file's name without ".v2.onednn", then ".packed.isa<N>.dnnl<version>.v2.onednn".
std::string packed_file_path(const std::string& weights_path);

/// Fills `w`'s packed cache (the replicas' shared packed weights) from `path` when the file is
/// complete, its XXH3-64 (header and payload) matches, it holds `weight_sha256`, the checksum of
/// `w`'s folded floats, this oneDNN build and ISA, and the Winograd transform this build computes
/// (probe filters transformed at load), and every entry lies where the writer puts it; each
/// entry's bytes stay in the read-only mapping. Each entry also names the checksum of the floats
/// it was packed from: the engine uses it only for a layer whose floats match (checked at first
/// use), and packs again otherwise.
/// Either way `w` then remembers `path`, so that the engine writes the file (save_packed_weights)
/// once a network build packed something it lacks. Returns the entries loaded (0: none, and
/// `why` says what did not check out; "" when there is no file).
std::size_t attach_packed_weights(const InceptionWeights& w, const std::string& path, const std::string& weight_sha256,
                                  std::string* why = nullptr);

/// Writes `w`'s packed cache to its file (atomically: temp file + rename) when it holds anything
/// this process packed since it was attached or last saved; nothing otherwise, and nothing when
/// no file was attached. Called by the oneDNN engine after each network build. A write that
/// fails (read-only or full cache) costs only the next start-up's time: it is not an error.
void save_packed_weights(const InceptionWeights& w);

}  // namespace vecbench
