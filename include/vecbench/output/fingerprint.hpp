// What makes a vector: the fingerprint of an output folder. Every vector in OUT was made under
// the fingerprint recorded once in OUT/vecbench.json (and named by id in every manifest line).
// A run whose fingerprint differs is refused before it writes anything, naming the fields that
// differ; `--replace-fingerprint` moves everything made under the old one aside first. A folder
// that holds no vector (a run that failed before its first) is taken over by the next sole writer.
#pragma once
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/base/weight_source.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/files/sha256.hpp"
#include "vecbench/core/system/host.hpp"
#include "vecbench/input/jpeg_decoder.hpp"
#include "vecbench/output/manifest.hpp"
#include "vecbench_version.hpp"

namespace vecbench {

/// Version of vecbench's feature definition (pool_3 after the model's own normalization, float32,
/// as written by the vc/npy/shards writers). Bump it when a change alters the vectors themselves.
constexpr int kFeatureFormatVersion = 1;

/// Everything that decides the vector an input gets. Two runs with equal fields give the same
/// vectors (exact fp32 engines within 1e-4 of each other, the documented engine tolerance).
struct FingerprintFields {
  std::string model_sha256;  ///< sha256 of the weights (the export's weight_sha256, else of the model file)
  std::string model_arch;    ///< tf2015 | torchvision | ... ("?" unknown)
  int input_size = 299;      ///< pixels per side fed to the network
  int feature_dim = 2048;    ///< floats per vector
  std::string resize;        ///< tf-legacy | bilinear | pil-bicubic
  std::string exif;          ///< ignore | apply
  bool fast_decode = false;  ///< reduced-DCT JPEG decode (not exact)
  /// JPEG arithmetic; recorded as "decode" only when not exact, so that folders written before
  /// the setting existed keep their fingerprint.
  JpegDecoder jpeg_decoder = JpegDecoder::exact;
  DecodeWhere decode_where = DecodeWhere::cpu;  ///< gpu: nvJPEG's pixels (recorded as decode gpu)
  std::string arithmetic;        ///< fp32 (torchscript and onednn agree within 1e-4) | bf16 | fp16 | none (no network)
  std::string source = "files";  ///< files | predecoded | synthetic seed S (what the input names mean)
  /// The FID tool whose pipeline the model follows (pytorch-fid | torch-fidelity); recorded as
  /// "like" only when set, so that folders written before presets keep their fingerprint.
  std::string like;
};

/// A fingerprint: its fields as JSON (keys sorted, so the text and the id are canonical).
struct Fingerprint {
  nlohmann::json fields = nlohmann::json::object();
  /// Where the model's weights came from (the export's weight_source). Recorded in vecbench.json
  /// beside the fingerprint, not in it (the model's sha256 already tells models apart), so that
  /// `stats` and `fid` can refuse a store of synthetic weights.
  WeightSource weight_source;
  bool empty() const { return fields.empty(); }
  /// 16 hex digits of the sha256 of the fields' canonical JSON.
  std::string id() const { return sha256_hex(fields.dump()).substr(0, 16); }
};

inline Fingerprint make_fingerprint(const FingerprintFields& f) {
  Fingerprint p;
  p.fields = {{"feature_format", kFeatureFormatVersion},
              {"model_sha256", f.model_sha256},
              {"model_arch", f.model_arch},
              {"input_size", f.input_size},
              {"feature_dim", f.feature_dim},
              {"resize", f.resize},
              {"exif", f.exif},
              {"fast_decode", f.fast_decode},
              {"arithmetic", f.arithmetic},
              {"source", f.source}};
  if (f.decode_where != DecodeWhere::cpu || f.jpeg_decoder != JpegDecoder::exact)
    p.fields["decode"] = decode_name(f.decode_where, f.jpeg_decoder);
  if (!f.like.empty()) p.fields["like"] = f.like;
  return p;
}

/// "field: A (OUT) vs B (this run)" for every field that differs.
inline std::vector<std::string> fingerprint_diff(const nlohmann::json& stored, const nlohmann::json& run) {
  std::set<std::string> keys;
  for (const auto& [k, v] : stored.items()) keys.insert(k);
  for (const auto& [k, v] : run.items()) keys.insert(k);
  std::vector<std::string> out;
  for (const auto& k : keys) {
    const auto a = stored.contains(k) ? stored[k].dump() : std::string("(none)");
    const auto b = run.contains(k) ? run[k].dump() : std::string("(none)");
    if (a != b) out.push_back(k + ": " + a + " in the folder vs " + b + " for this run");
  }
  return out;
}

namespace detail {
inline nlohmann::json store_json(const Fingerprint& fp) {
  // 2: manifest lines may carry "src" (the input's identity), "xxh3" (the vector's checksum) and
  // "input_hex" (a name that is not UTF-8). Stores of version 1 are read as they are: their lines
  // count as done while their data is complete, and `verify` checks their sizes only.
  return {{"vecbench_store", 2},
          {"fingerprint_id", fp.id()},
          {"fingerprint", fp.fields},
          {"created_utc", utc_stamp()},
          {"created_by", std::string("vecbench ") + VECBENCH_VERSION},
          {"weight_source", fp.weight_source.text()}};
}
}  // namespace detail

/// The fingerprint recorded in `dir`/vecbench.json; empty when there is none.
inline Fingerprint read_store_fingerprint(const fs::path& dir) {
  Fingerprint fp;
  std::ifstream in(dir / "vecbench.json");
  if (!in) return fp;
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("fingerprint") || !j["fingerprint"].is_object())
    throw OutputFolderError(dir.string(), "vecbench.json is not a vecbench store file (unreadable fingerprint)");
  fp.fields = j["fingerprint"];
  if (j.contains("weight_source") && j["weight_source"].is_string())
    fp.weight_source = WeightSource::parse(j["weight_source"].get<std::string>());
  return fp;
}

/// Moves everything vecbench wrote into `dir` (manifests, shards, the vc/npy files their lines
/// name, vecbench.json) into `dir`/superseded-<old id>-<UTC>/, keeping relative paths. Nothing
/// is deleted. Returns the folder.
inline fs::path supersede_store(const fs::path& dir, const std::string& old_id) {
  const fs::path to =
      dir / ("superseded-" + (old_id.empty() ? std::string("unfingerprinted") : old_id) + "-" + utc_stamp());
  std::set<std::string> names;
  for (const auto& m : manifest_files(dir)) {
    names.insert(m.filename().string());
    for_each_manifest_line(m, [&](const ManifestLine& l) {
      for (const auto* k : {&l.output, &l.shard})
        if (*k) names.insert(**k);
    });
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (is_shard_name(e.path().filename().string())) names.insert(e.path().filename().string());
  names.insert("vecbench.json");
  for (const auto& n : names) {
    const fs::path rel = fs::path(n).lexically_normal();
    if (rel.empty() || rel.is_absolute() || *rel.begin() == "..") continue;  // never outside dir
    if (!fs::exists(dir / rel, ec)) continue;
    fs::create_directories((to / rel).parent_path(), ec);
    fs::rename(dir / rel, to / rel, ec);
    if (ec) throw IoError((dir / rel).string(), "cannot move it aside into " + to.string() + ": " + ec.message());
  }
  std::set<fs::path> dirs = {dir};  // the moves on disk before anything is written anew
  for (const auto& n : names) dirs.insert((to / fs::path(n).lexically_normal()).parent_path());
  for (const auto& d : dirs)
    if (fs::is_directory(d, ec)) sync_directory(d);
  return to;
}

/// Whether `dir` holds no vector: no manifest line names an output file or a shard, and no shard
/// file is there (what an earlier run that failed or stopped before its first vector leaves).
inline bool store_holds_no_vectors(const fs::path& dir) {
  bool any = false;
  for (const auto& m : manifest_files(dir))
    for_each_manifest_line(m, [&](const ManifestLine& l) { any = any || l.names_data; });
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) any = any || is_shard_name(e.path().filename().string());
  return !any;
}

/// Makes sure every vector in `dir` is (or will be) made under `fp`: writes vecbench.json into a
/// new folder; accepts a folder of the same fingerprint; refuses (OutputFolderError) a folder of
/// another one, or one with manifests but no vecbench.json (written before fingerprints), unless
/// `replace`, which moves the old outputs aside first (supersede_store) and says so on `log`.
/// A `sole_writer` (the only writer, holding the folder's exclusive lock) also takes over a folder
/// of another fingerprint that holds no vector (store_holds_no_vectors: e.g. a run whose replicas
/// failed to build), moving its records aside the same way: nothing there was made under the old
/// fingerprint, so nothing can mix.
inline void open_store_identity(const fs::path& dir, const Fingerprint& fp, bool replace, std::ostream& log,
                                bool sole_writer = false) {
  const Fingerprint stored = read_store_fingerprint(dir);
  if (!stored.empty() && stored.id() == fp.id()) return;
  const bool legacy = stored.empty() && !manifest_files(dir).empty();
  if (!stored.empty() || legacy) {
    const bool vectorless = !replace && sole_writer && store_holds_no_vectors(dir);
    if (!replace && !vectorless) {
      std::string why;
      if (legacy) {
        why =
            "holds vectors written before output folders had fingerprints (manifests, no vecbench.json), so "
            "nothing says how they were made";
      } else {
        why = "holds vectors made under fingerprint " + stored.id() + ", not this run's " + fp.id() + ":";
        for (const auto& d : fingerprint_diff(stored.fields, fp.fields)) why += "\n  " + d;
      }
      throw OutputFolderError(dir.string(), why +
                                                "\nNothing was written. Either write to a new --out, or pass "
                                                "--replace-fingerprint to move the old vectors aside (into "
                                                "superseded-*/ in the folder) and redo every input under this run's "
                                                "fingerprint.");
    }
    const fs::path aside = supersede_store(dir, stored.empty() ? "" : stored.id());
    log << "vecbench: " << dir.string() << ": earlier " << (vectorless ? "records, no vector," : "outputs")
        << " (fingerprint " << (stored.empty() ? std::string("none") : stored.id()) << ") moved to " << aside.string()
        << "\n";
  }
  // Create vecbench.json only if absent (link(2) fails when another process made it first). The
  // candidate's name is not a temp-file name (".tmp."): rank 0 of an MPI job removes those while
  // the other ranks may be writing this file.
  std::error_code ec;
  fs::create_directories(dir, ec);  // merge --out names a folder that may not exist yet
  const fs::path cand = dir / (".vecbench.json.new." + std::to_string(::getpid()));
  const std::string text = detail::store_json(fp).dump(2) + "\n";
  std::FILE* f = std::fopen(cand.c_str(), "wb");
  if (!f) throw IoError(cand.string(), std::string("cannot create: ") + std::strerror(errno));
  const bool written =
      std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  std::fclose(f);
  const int rc = written ? ::link(cand.c_str(), (dir / "vecbench.json").c_str()) : -1;
  fs::remove(cand, ec);
  if (!written) throw IoError(cand.string(), "write failed (disk full?)");
  if (rc == 0) sync_directory(dir);  // vecbench.json's entry on disk before any vector is written
  if (rc != 0) {
    const Fingerprint now = read_store_fingerprint(dir);
    if (now.empty() || now.id() != fp.id())
      throw OutputFolderError(dir.string(), "another process gave it fingerprint " + now.id() + " while this run (" +
                                                fp.id() + ") started; write to another --out");
  }
}

}  // namespace vecbench
