// The sides of `stats`, `fid` and `metrics` (src/app/fid_commands.cpp, metrics_command.cpp):
// image inputs vectorized into stores with one model chosen once, and the checks every side
// passes (synthetic weights, another FID tool's preset, the two sides' fingerprints).
#pragma once
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "vecbench/app/commands.hpp"
#include "vecbench/app/fid_presets.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/core/base/weight_source.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/files/sha256.hpp"
#include "vecbench/engine/encoder.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/fid/fid.hpp"
#include "vecbench/output/fingerprint.hpp"
#include "vecbench/output/manifest.hpp"

namespace vecbench::fid_inputs {

/// What the side checks need of a side (statistics or the features themselves).
struct Side {
  std::string origin, fingerprint_id;
  nlohmann::json fingerprint;
  std::int64_t n = 0;
  int dim = 0;
};
inline Side side_of(const FeatureStats& s) { return {s.origin, s.fingerprint_id, s.fingerprint, s.n, s.dim}; }
inline Side side_of(const FeatureSet& s) {
  return {s.origin, s.fingerprint_id, s.fingerprint, static_cast<std::int64_t>(s.n), s.dim};
}

/// The warnings a comparison of `a` and `b` carries; throws when their fingerprints differ and
/// `allow_mismatch` is off.
inline std::vector<std::string> check_sides(const Side& a, const Side& b, bool allow_mismatch,
                                            const char* command = "fid", bool covariance = true) {
  std::vector<std::string> warn;
  for (const Side* s : {&a, &b}) {
    if (s->fingerprint_id.empty())
      warn.push_back(s->origin +
                     ": no fingerprint (a stats file of another tool?): how its features were made is "
                     "not known, so not checked against the other side");
    if (covariance && s->n > 0 && s->n < s->dim + 1)
      warn.push_back(s->origin + ": " + std::to_string(s->n) + " samples, fewer than " + std::to_string(s->dim + 1) +
                     ": its covariance is rank-deficient and FID is biased (use at least " +
                     std::to_string(s->dim + 1) + ", 10,000 or more for published figures)");
  }
  if (!a.fingerprint_id.empty() && !b.fingerprint_id.empty() && a.fingerprint_id != b.fingerprint_id) {
    std::string why =
        "the two sides were made differently (fingerprints " + a.fingerprint_id + " and " + b.fingerprint_id + ")";
    if (a.fingerprint.is_object() && b.fingerprint.is_object())
      for (const auto& d : fingerprint_diff(a.fingerprint, b.fingerprint)) why += "\n  " + d;
    if (!allow_mismatch)
      throw ConfigError(command, why +
                                     "\nTheir figures would mix a preprocessing or model difference into the "
                                     "comparison; pass --allow-mismatch to compute it anyway");
    warn.push_back(why);
  }
  return warn;
}

/// Refuses (ConfigError) statistics from synthetic weights unless `allow`; returns whether they are.
inline bool check_weights(const std::string& origin, const WeightSource& weight_source, bool allow) {
  if (!weight_source.synthetic()) return false;
  if (!allow)
    throw ConfigError(origin, "was made with synthetic (random) weights (" + weight_source.text() +
                                  "): a FID or statistics from them are not Inception's and compare with nothing "
                                  "published. Put a FID tool's Inception weights where vecbench looks for them:" +
                                  where_to_put_weights() +
                                  "\nor pass --allow-synthetic-weights to compute it anyway (labelled synthetic)");
  return true;
}

/// Turns image inputs into stores, with one model chosen once (the first line says which and why).
class FeatureInputs {
 public:
  explicit FeatureInputs(const FidModelArgs& m, const char* command) : m_(m), command_(command) {
    if (!m_.like.empty()) m_.like = find_fid_preset(m_.like, m_.encoder).name;  // an alias's preset
    if (!m_.encoder.empty()) find_encoder(m_.encoder);
  }

  /// `in` as something stats can read: an output folder, a .npy matrix or a .npz as they are; an
  /// image folder, list or image is vectorized first into its own store below the store root
  /// (default: the cache folder's stores/, core/files/fs_util.hpp's cache_dir), named by the input's
  /// canonical path and the model's weights: a rerun resumes it, a changed file is redone.
  std::string as_features(const std::string& in) {
    const fs::path p(in);
    std::error_code ec;
    const std::string ext = p.extension().string();
    if (ext == ".npy" || ext == ".npz" || ext == ".pkl") return in;  // .pkl: EDM2's reference
    // a store of several encoders (one store per encoder, in a folder named after it): --encoder's
    const std::string enc = m_.encoder.empty() ? "inception-v3" : m_.encoder;
    if (fs::is_directory(p, ec) && fs::exists(p / enc / "vecbench.json", ec)) return (p / enc).string();
    if (fs::is_directory(p, ec) && (fs::exists(p / "vecbench.json", ec) || !manifest_files(p).empty())) return in;
    if (!fs::exists(p, ec)) throw IoError(in, "no such file or folder");
    const ModelInfo& model = chosen_model();
    const fs::path root = m_.store_root.empty() ? cache_dir() / "stores" : fs::path(m_.store_root);
    VectorizeArgs a;
    a.images = in;
    a.model.path = choice_->path;
    a.out =
        (root /
         sha256_hex(fs::weakly_canonical(p, ec).string() + '\n' + model.identity() + '\n' + model.like).substr(0, 16))
            .string();
    a.format = OutputFormat::shards;
    std::cerr << "vecbench: " << in << " holds images: vectorizing them into the store " << a.out << "\n";
    const int rc = cmd_vectorize(a);
    if (rc == kExitSomeInputsFailed)
      std::cerr << "vecbench: warning: some of " << in << "'s images failed (their manifest lines say why); the "
                << "statistics are of the others\n";
    else if (rc != 0)
      throw IoError(in, "vectorizing it into " + a.out + " failed (exit status " + std::to_string(rc) + ")");
    return a.out;
  }

  /// The statistics of `in` (as_features first), refused when made with synthetic weights (unless
  /// allowed) or, with --like, with another tool's preset: a store is checked from its
  /// vecbench.json before its vectors are read, a stats file or matrix once it is loaded.
  FeatureStats stats(const std::string& in, std::string& features) {
    features = as_features(in);
    return stats_at(features);
  }
  /// The statistics of `features` (what as_features returned), checked as stats() says.
  FeatureStats stats_at(const std::string& features) {
    const bool store = check_store(features);
    FeatureStats s = stats_of(features, m_.encoder);  // a .pkl: the encoder's key
    if (!store) check(s.origin, s.weight_source, s.fingerprint);
    return s;
  }
  /// The feature vectors of `features` (what as_features returned), checked as stats() says; a
  /// stats file is refused (it holds mu and sigma only).
  FeatureSet set_at(const std::string& features, const char* why) {
    const std::string ext = fs::path(features).extension().string();
    if (ext == ".pkl" || (ext == ".npz" && !npz_holds_features(features)))
      throw ConfigError(features, std::string("a stats file holds mu and sigma only; ") + why +
                                      " need the features themselves (an output folder or a .npy matrix)");
    const bool store = check_store(features);
    FeatureSet s = load_features(features);
    if (!store) check(s.origin, s.weight_source, s.fingerprint);
    return s;
  }
  void check(const std::string& origin, const WeightSource& weight_source, const nlohmann::json& fields) {
    synthetic_ = check_weights(origin, weight_source, m_.allow_synthetic) || synthetic_;
    if (!fields.is_object()) return;
    const std::string made_by = encoder_of(fields);
    if (!m_.encoder.empty() && made_by != m_.encoder)
      throw ConfigError(origin, "holds " + made_by + " features, not " + m_.encoder + " (what " + command_ +
                                    " computes from): vectorize it with --encoder " + m_.encoder +
                                    " into another store");
    if (m_.like.empty()) return;
    const std::string like = fields.value("like", std::string());
    if (like != m_.like)
      throw ConfigError(origin, "was made " +
                                    (like.empty() ? std::string("without a FID tool's preset") : "like " + like) +
                                    ", not like " + m_.like + " (what " + command_ +
                                    " computes from): vectorize it with --like " + m_.like + " into another store");
  }
  bool synthetic() const { return synthetic_; }
  /// --like's preset (an alias resolved), "" without one.
  const std::string& like() const { return m_.like; }
  /// The encoder a fingerprint's model_arch names (inception-v3 when it names none: stores made
  /// before encoders, other tools' files).
  static std::string encoder_of(const nlohmann::json& fields) {
    const EncoderSpec* e = fields.is_object() ? encoder_of_arch(fields.value("model_arch", std::string())) : nullptr;
    return e ? e->name : "inception-v3";
  }
  /// The encoder this command's figures are of: --encoder, else the chosen or stored one.
  const std::string& encoder() const { return m_.encoder; }
  /// Checks a store's vecbench.json (check()); false when `features` is not a store.
  bool check_store(const std::string& features) {
    std::error_code ec;
    if (!fs::is_directory(features, ec)) return false;
    const Fingerprint fp = read_store_fingerprint(features);
    check(features, fp.weight_source, fp.fields);
    return true;
  }
  /// The model image inputs are (or would be) vectorized with, chosen once (the first line says
  /// which and why; synthetic weights are refused unless allowed).
  const ModelInfo& model() { return chosen_model(); }
  /// Makes `like` (a store's preset) the choice when neither --model nor --like was given and no
  /// model was chosen yet.
  void default_like(const std::string& like) {
    if (!choice_ && m_.model.empty() && m_.like.empty() && !like.empty()) m_.like = find_fid_preset(like).name;
  }

 private:
  const ModelInfo& chosen_model() {
    if (!choice_) {
      choice_ = choose_fid_model(m_.model, m_.like, m_.encoder);
      info_ = read_model_info(choice_->path);
      std::cerr << "vecbench " << command_ << ": model " << choice_->path << " ("
                << (info_.synthetic() ? "synthetic weights " : "") << info_.weight_source.text()
                << "): " << choice_->why << "\n";
      check_weights(choice_->path, info_.weight_source, m_.allow_synthetic);
    }
    return info_;
  }
  FidModelArgs m_;
  const char* command_;
  std::optional<FidModelChoice> choice_;
  ModelInfo info_;
  bool synthetic_ = false;
};

/// How a figure of features from `fingerprint` is named: "FID" for Inception-v3's (the line every
/// script reads), else the encoder's Fréchet distance with the encoder and the protocol,
/// "FD_DINOv2 (dinov2-vit-l-14, dgm-eval) =".
/// A side without a fingerprint (another tool's statistics) is of the command's encoder (`command`).
inline std::string fd_label(const nlohmann::json& fingerprint, const std::string& command = "") {
  const std::string enc =
      !fingerprint.is_object() && !command.empty() ? command : FeatureInputs::encoder_of(fingerprint);
  if (enc == "inception-v3") return "FID";
  const std::string like = fingerprint.is_object() ? fingerprint.value("like", std::string()) : "";
  return std::string(find_encoder(enc).fd_name) + " (" + enc + ", " + (like.empty() ? "no preset" : like) + ") =";
}
/// What the other figures of such features carry at the end: "" for Inception-v3's, else
/// " [dinov2-vit-l-14, dgm-eval]".
inline std::string encoder_tag(const nlohmann::json& fingerprint, const std::string& command = "") {
  const std::string enc =
      !fingerprint.is_object() && !command.empty() ? command : FeatureInputs::encoder_of(fingerprint);
  if (enc == "inception-v3") return "";
  const std::string like = fingerprint.is_object() ? fingerprint.value("like", std::string()) : "";
  return " [" + enc + ", " + (like.empty() ? "no preset" : like) + "]";
}

/// Appended to every figure computed from synthetic weights.
inline const char* const kSyntheticLabel =
    " (synthetic weights: not Inception's features; comparable with no published FID)";

}  // namespace vecbench::fid_inputs
