// `vecbench stats` and `vecbench fid` (include/vecbench/fid/fid.hpp): the research workflow's
// last step without leaving vecbench.
#include <cstdio>
#include <iostream>

#include <optional>

#include "vecbench/app/commands.hpp"
#include "vecbench/app/fid_presets.hpp"
#include "vecbench/core/error.hpp"
#include "vecbench/core/fs_util.hpp"
#include "vecbench/core/sha256.hpp"
#include "vecbench/core/weights_note.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/fid/fid.hpp"
#include "vecbench/output/fingerprint.hpp"
#include "vecbench/output/manifest.hpp"

namespace vecbench {
#ifdef VECBENCH_WITH_FID
namespace {

/// The warnings a comparison of `a` and `b` carries; throws when their fingerprints differ and
/// `allow_mismatch` is off.
std::vector<std::string> check_sides(const FeatureStats& a, const FeatureStats& b, bool allow_mismatch) {
  std::vector<std::string> warn;
  for (const FeatureStats* s : {&a, &b}) {
    if (s->fingerprint_id.empty())
      warn.push_back(s->origin +
                     ": no fingerprint (a stats file of another tool?): how its features were made is "
                     "not known, so not checked against the other side");
    if (s->n > 0 && s->n < s->dim + 1)
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
      throw ConfigError("fid", why +
                                   "\nTheir FID would mix a preprocessing or model difference into the "
                                   "comparison; pass --allow-mismatch to compute it anyway");
    warn.push_back(why);
  }
  return warn;
}

/// Refuses (ConfigError) statistics from synthetic weights unless `allow`; returns whether they are.
bool check_weights(const std::string& origin, const std::string& weight_source, bool allow) {
  if (!synthetic_weights(weight_source)) return false;
  if (!allow)
    throw ConfigError(origin, "was made with synthetic (random) weights (" + weight_source +
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
    if (!m_.like.empty()) m_.like = find_fid_preset(m_.like).name;  // an alias's preset
  }

  /// `in` as something stats can read: an output folder, a .npy matrix or a .npz as they are; an
  /// image folder, list or image is vectorized first into its own store below the store root
  /// (default: the cache folder's stores/, core/fs_util.hpp's cache_dir), named by the input's
  /// canonical path and the model's weights: a rerun resumes it, a changed file is redone.
  std::string as_features(const std::string& in) {
    const fs::path p(in);
    std::error_code ec;
    const std::string ext = p.extension().string();
    if (ext == ".npy" || ext == ".npz") return in;
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
    std::error_code ec;
    const bool store = fs::is_directory(features, ec);
    if (store) {
      const Fingerprint fp = read_store_fingerprint(features);
      check(features, fp.weight_source, fp.fields);
    }
    FeatureStats s = stats_of(features);
    if (!store) check(s.origin, s.weight_source, s.fingerprint);
    return s;
  }
  void check(const std::string& origin, const std::string& weight_source, const nlohmann::json& fields) {
    synthetic_ = check_weights(origin, weight_source, m_.allow_synthetic) || synthetic_;
    if (m_.like.empty() || !fields.is_object()) return;
    const std::string like = fields.value("like", std::string());
    if (like != m_.like)
      throw ConfigError(origin, "was made " +
                                    (like.empty() ? std::string("without a FID tool's preset") : "like " + like) +
                                    ", not like " + m_.like + " (--like): vectorize it with --like " + m_.like +
                                    " into another store");
  }
  bool synthetic() const { return synthetic_; }

 private:
  const ModelInfo& chosen_model() {
    if (!choice_) {
      choice_ = choose_fid_model(m_.model, m_.like);
      info_ = read_model_info(choice_->path);
      std::cerr << "vecbench " << command_ << ": model " << choice_->path << " ("
                << (info_.synthetic() ? "synthetic weights " + info_.weight_source : info_.weight_source)
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

const char* kSyntheticLabel = " (synthetic weights: not Inception's features; comparable with no published FID)";

}  // namespace

int cmd_stats(const StatsArgs& args) {
  FeatureInputs inputs(args.m, "stats");
  std::string in;
  const FeatureStats s = inputs.stats(args.in, in);
  save_stats(args.out, s);
  std::cout << "stats " << in << ": n=" << s.n << " dim=" << s.dim << " fingerprint "
            << (s.fingerprint_id.empty() ? "none" : s.fingerprint_id) << " -> " << args.out
            << (inputs.synthetic() ? kSyntheticLabel : "") << "\n";
  return 0;
}

int cmd_fid(const FidArgs& args) {
  FidArgs o = args;
  FeatureInputs inputs(o.m, "fid");
  const FeatureStats a = inputs.stats(o.a, o.a), b = inputs.stats(o.b, o.b);
  const std::vector<std::string> warnings = check_sides(a, b, o.allow_mismatch);
  for (const auto& w : warnings) std::cerr << "vecbench fid: warning: " << w << "\n";
  const FidResult r = frechet_distance(a, b);
  const bool synthetic = inputs.synthetic();
  nlohmann::json j = {{"fid", r.fid},
                      {"n_a", a.n},
                      {"n_b", b.n},
                      {"fingerprint_a", a.fingerprint_id},
                      {"fingerprint_b", b.fingerprint_id},
                      {"weight_source_a", a.weight_source},
                      {"weight_source_b", b.weight_source},
                      {"synthetic_weights", synthetic},
                      {"like", a.fingerprint.is_object() ? a.fingerprint.value("like", std::string()) : ""},
                      {"mean_term", r.mean_term},
                      {"trace_sqrt", r.trace_sqrt},
                      {"clamped_eigenvalue_s1", r.clamped_s1},
                      {"clamped_eigenvalue_product", r.clamped_product},
                      {"warnings", warnings}};
  if (synthetic) j["weights"] = "synthetic weights";
  if (r.clamped_product < 0 || r.clamped_s1 < 0)
    std::cerr << "vecbench fid: negative eigenvalues clamped to 0 (most negative: S1 " << r.clamped_s1
              << ", S1^1/2 S2 S1^1/2 " << r.clamped_product << ")\n";
  if (o.kid) {
    if (o.a.size() > 4 && o.a.substr(o.a.size() - 4) == ".npz")
      throw ConfigError("--kid", o.a + ": KID needs the features themselves, not a stats file");
    if (o.b.size() > 4 && o.b.substr(o.b.size() - 4) == ".npz")
      throw ConfigError("--kid", o.b + ": KID needs the features themselves, not a stats file");
    const KidResult k =
        kernel_distance(load_features(o.a), load_features(o.b), o.kid_subsets, o.kid_subset_size, o.seed);
    j["kid"] = k.mean;
    j["kid_std"] = k.std;
    j["kid_subsets"] = k.subsets;
    j["kid_subset_size"] = k.subset_size;
    std::printf("KID %.10g +- %.3g (%d subsets of %zu)%s\n", k.mean, k.std, k.subsets, k.subset_size,
                synthetic ? kSyntheticLabel : "");
  }
  if (!o.json_out.empty()) atomic_write(o.json_out, j.dump(2) + "\n");
  std::printf("FID %.10g%s\n", r.fid, synthetic ? kSyntheticLabel : "");
  return 0;
}

#else
int cmd_stats(const StatsArgs&) {
  throw Error("vecbench stats: this build has no LAPACKE/OpenBLAS (apt-get install liblapacke-dev libopenblas-dev)");
}
int cmd_fid(const FidArgs&) {
  throw Error("vecbench fid: this build has no LAPACKE/OpenBLAS (apt-get install liblapacke-dev libopenblas-dev)");
}
#endif
}  // namespace vecbench
