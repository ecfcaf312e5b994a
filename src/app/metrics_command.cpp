// `vecbench metrics A [B]` (include/vecbench/fid/metrics.hpp, cmmd.hpp, docs/metrics.md): the
// Inception Score, FID, KID, CMMD, precision/recall and density/coverage from the same stores, one
// line each.
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "fid_inputs.hpp"
#include "vecbench/app/commands.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/fid/cmmd.hpp"
#include "vecbench/fid/fid.hpp"
#include "vecbench/fid/metrics.hpp"

namespace vecbench {
#ifdef VECBENCH_WITH_FID
using namespace fid_inputs;

namespace {

/// The classifier of the model that made `a`'s vectors: the chosen model (--model, --like, else
/// the preset the store was made with, else as fid chooses), refused when the store says another
/// model made them.
Classifier classifier_for(FeatureInputs& inputs, const FeatureSet& a, std::vector<std::string>& warnings) {
  if (FeatureInputs::encoder_of(a.fingerprint) != "inception-v3" ||
      (!inputs.encoder().empty() && inputs.encoder() != "inception-v3"))
    throw ConfigError("--isc", "the Inception Score needs Inception-v3's features and classifier; " + a.origin +
                                   " holds " + FeatureInputs::encoder_of(a.fingerprint) + " features");
  if (a.fingerprint.is_object()) inputs.default_like(a.fingerprint.value("like", std::string()));
  const ModelInfo& m = inputs.model();
  const std::string made_by = a.fingerprint.is_object() ? a.fingerprint.value("model_sha256", std::string()) : "";
  if (made_by.empty())
    warnings.push_back(a.origin + ": no fingerprint, so which model made its vectors is not known: the classifier of " +
                       m.path + " is applied to them unchecked");
  else if (made_by != m.identity())
    throw ConfigError("--isc", a.origin + " was vectorized by the model of weights " + made_by.substr(0, 16) + " (" +
                                   (a.weight_source.known() ? a.weight_source.text() : std::string("source unknown")) +
                                   "), not by " + m.path + " (" + m.identity().substr(0, 16) +
                                   "): that model's classifier does not belong to these vectors; pass --model FILE, "
                                   "the model " +
                                   a.origin + " was vectorized with");
  return load_classifier(m.path);
}

/// --isc: the Inception Score of `a` by the classifier of the model that made it, into j["isc"].
InceptionScore isc_of(FeatureInputs& inputs, const FeatureSet& a, const MetricsArgs& o,
                      std::vector<std::string>& warnings, nlohmann::json& j) {
  const Classifier c = classifier_for(inputs, a, warnings);
  const InceptionScore is = inception_score(a, c, o.isc_splits, o.isc_shuffle, o.isc_seed);
  j["isc"] = {{"mean", is.mean},
              {"std", is.std},
              {"splits", is.splits},
              {"shuffle_seed", o.isc_shuffle ? nlohmann::json(o.isc_seed) : nlohmann::json(nullptr)},
              {"classifier", c.origin},
              {"classifier_sha256", c.sha256},
              {"definition", "torch-fidelity 0.4 isc on logits_unbiased (W pool_3, float64)"}};
  return is;
}

void print_is(const InceptionScore& s, const std::string& origin, const char* label) {
  std::printf("IS %.10g +- %.4g (%d splits of %zu vectors of %s; torch-fidelity's isc)%s\n", s.mean, s.std, s.splits,
              s.n, origin.c_str(), label);
}

/// How precision/recall's distances were computed, as the printed line and the JSON say it.
std::string prc_arithmetic(const PrecisionRecall& p) {
  if (p.arithmetic == KnnArithmetic::exact) return "float64 distances";
  std::string s = "float32 distances as torch-fidelity computes them on the CPU";
  if (p.boundary_generated + p.boundary_real > 0)
    s += "; " + std::to_string(p.boundary_generated) + " of " + std::to_string(p.n_generated) + " generated and " +
         std::to_string(p.boundary_real) + " of " + std::to_string(p.n_real) +
         " real samples lie within float32 rounding of a ball's edge: torch-fidelity on another BLAS, thread count "
         "or device may count them otherwise";
  return s;
}

void print_neighbours(const NeighbourMetrics& r, const char* label) {
  if (r.prc)
    std::printf("precision %.10g recall %.10g f_score %.6g (k=%d; torch-fidelity's prc, %s)%s\n", r.prc->precision,
                r.prc->recall, r.prc->f_score, r.prc->k, prc_arithmetic(*r.prc).c_str(), label);
  if (r.prdc)
    std::printf("density %.10g coverage %.10g precision %.10g recall %.10g (k=%d; prdc)%s\n", r.prdc->density,
                r.prdc->coverage, r.prdc->precision, r.prdc->recall, r.prdc->k, label);
}

nlohmann::json to_json(const NeighbourMetrics& r) {
  nlohmann::json j = nlohmann::json::object();
  if (r.prc)
    j["prc"] = {{"k", r.prc->k},
                {"precision", r.prc->precision},
                {"recall", r.prc->recall},
                {"f_score", r.prc->f_score},
                {"distances", r.prc->arithmetic == KnnArithmetic::exact ? "float64" : "float32 (torch-fidelity)"},
                {"boundary_generated", r.prc->boundary_generated},
                {"boundary_real", r.prc->boundary_real},
                {"definition", "torch-fidelity 0.4 prc: <= the k-th neighbour distance"}};
  if (r.prdc)
    j["prdc"] = {{"k", r.prdc->k},
                 {"precision", r.prdc->precision},
                 {"recall", r.prdc->recall},
                 {"density", r.prdc->density},
                 {"coverage", r.prdc->coverage},
                 {"definition", "prdc 0.2 compute_prdc: < the k-th neighbour distance"}};
  return j;
}

nlohmann::json cmmd_json(const CmmdResult& r) {
  return {{"value", r.value},
          {"sigma", r.sigma},
          {"scale", r.scale},
          {"n_a", r.n_a},
          {"n_b", r.n_b},
          {"used_a", r.used_a},
          {"used_b", r.used_b},
          {"batch", r.batch},
          {"mean_aa_minus_1", r.mean_aa_minus_1},
          {"mean_bb_minus_1", r.mean_bb_minus_1},
          {"mean_ab_minus_1", r.mean_ab_minus_1},
          {"definition",
           "google-research/cmmd distance.mmd: scale x (mean k(a,a') + mean k(b,b') - 2 mean k(a,b)), "
           "k = exp(-|x-y|^2 / (2 sigma^2)), diagonals included, float64"}};
}

std::string format_norm(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void print_cmmd(const CmmdResult& r, const char* label) {
  std::string dropped;
  if (r.batch > 0)
    dropped = "; batch " + std::to_string(r.batch) + ": " + std::to_string(r.n_a - r.used_a) + " + " +
              std::to_string(r.n_b - r.used_b) + " embeddings past the last full batch left out";
  std::printf("CMMD %.10g (sigma %g, scale %g, %zu x %zu embeddings%s)%s\n", r.value, r.sigma, r.scale, r.used_a,
              r.used_b, dropped.c_str(), label);
}

/// --fd-dinov2: the sides' DINOv2 ViT-L/14 features (--like's DINOv2 preset when that tool has
/// one, else the first found: dgm-eval's) and their Fréchet distance, printed with its protocol.
void fd_dinov2(const MetricsArgs& o, nlohmann::json& j) {
  FidModelArgs m = o.m;
  m.encoder = "dinov2-vit-l-14";
  bool tool_has_it = false;
  for (const auto& p : fid_presets()) tool_has_it = tool_has_it || (p.encoder == m.encoder && p.name == m.like);
  if (!m.like.empty() && !tool_has_it) {
    std::cerr << "vecbench metrics: --fd-dinov2: " << m.like << " has no DINOv2 preset; dgm-eval's is used\n";
    m.like = "dgm-eval";
  }
  FeatureInputs inputs(m, "metrics --fd-dinov2");
  const FeatureStats a = inputs.stats_at(inputs.as_features(o.a)), b = inputs.stats_at(inputs.as_features(o.b));
  for (const auto& w : check_sides(side_of(a), side_of(b), o.allow_mismatch, "metrics"))
    std::cerr << "vecbench metrics: warning: " << w << "\n";
  const FidResult r = frechet_distance(a, b);
  const nlohmann::json& fp = a.fingerprint.is_object() ? a.fingerprint : b.fingerprint;  // a .pkl side has none
  j["fd_dinov2"] = {{"value", r.fid},
                    {"encoder", m.encoder},
                    {"protocol", fp.is_object() ? fp.value("like", std::string()) : ""},
                    {"n_a", a.n},
                    {"n_b", b.n},
                    {"fingerprint_a", a.fingerprint_id},
                    {"fingerprint_b", b.fingerprint_id}};
  j["synthetic_weights"] = j.value("synthetic_weights", false) || inputs.synthetic();
  std::printf("%s %.10g%s\n", fd_label(fp, m.encoder).c_str(), r.fid, inputs.synthetic() ? kSyntheticLabel : "");
}

/// The encoder CMMD is defined on (google-research/cmmd: CLIP ViT-L/14 at 336 px).
constexpr const char* kCmmdEncoder = "clip-vit-l-14-336px";

/// --cmmd: the sides' embeddings as CMMD's reference makes them (CLIP ViT-L/14@336px, `--like
/// cmmd`, whatever --like the other metrics use; a store of several encoders gives its
/// clip-vit-l-14-336px one, a store of another encoder or preset is refused by name, a .npy
/// matrix is taken as it is, with a warning when its rows are not unit vectors) and their CMMD.
void cmmd_metric(const MetricsArgs& o, nlohmann::json& j) {
  FidModelArgs m = o.m;
  m.encoder = kCmmdEncoder;
  m.model.clear();  // --model is the other metrics' (Inception's)
  if (!m.like.empty() && m.like != "cmmd")
    std::cerr << "vecbench metrics: --cmmd: the reference's embeddings (--like cmmd), not " << m.like << "'s\n";
  m.like = "cmmd";
  FeatureInputs inputs(m, "metrics --cmmd");
  const FeatureSet a = inputs.set_at(inputs.as_features(o.a), "CMMD"),
                   b = inputs.set_at(inputs.as_features(o.b), "CMMD");
  std::vector<std::string> warnings = check_sides(side_of(a), side_of(b), o.allow_mismatch, "metrics", false);
  for (const FeatureSet* s : {&a, &b})
    if (const auto [lo, hi] = row_norm_range(*s); lo < 1 - 1e-3 || hi > 1 + 1e-3)
      warnings.push_back(s->origin + ": its embeddings are not unit vectors (L2 norms " + format_norm(lo) + " to " +
                         format_norm(hi) +
                         "): CMMD's reference normalizes its CLIP embeddings; this CMMD compares with none of its "
                         "figures");
  for (const auto& w : warnings) std::cerr << "vecbench metrics: warning: " << w << "\n";
  CmmdOptions co;
  co.batch = o.cmmd_batch;
  const fs::path terms_dir = cache_dir() / "cmmd-terms";
  const CmmdTermCache terms(terms_dir);
  const CmmdResult r = cmmd(a, b, co, o.cmmd_cache ? &terms : nullptr);
  for (const auto& [side, cached] : {std::pair{&a, r.aa_from_cache}, {&b, r.bb_from_cache}})
    if (cached) std::cerr << "vecbench metrics: --cmmd: " << side->origin << "'s own kernel term from the cache\n";
  const nlohmann::json& fp = a.fingerprint.is_object() ? a.fingerprint : b.fingerprint;  // a .npy side has none
  nlohmann::json c = cmmd_json(r);
  c["encoder"] = fp.is_object() ? FeatureInputs::encoder_of(fp) : std::string("unknown (.npy)");
  c["protocol"] = fp.is_object() ? fp.value("like", std::string()) : "";
  c["fingerprint_a"] = a.fingerprint_id;
  c["fingerprint_b"] = b.fingerprint_id;
  // where each side's own term came from; the folder they are kept in (null: --no-cmmd-cache)
  c["own_terms"] = {{"a", r.aa_from_cache ? "cache" : "computed"},
                    {"b", r.bb_from_cache ? "cache" : "computed"},
                    {"cache", o.cmmd_cache ? nlohmann::json(terms_dir.string()) : nullptr}};
  c["warnings"] = warnings;
  j["cmmd"] = c;
  j["synthetic_weights"] = j.value("synthetic_weights", false) || inputs.synthetic();
  const std::string label = (fp.is_object() ? encoder_tag(fp) : std::string(" [embeddings as stored]")) +
                            (inputs.synthetic() ? kSyntheticLabel : "");
  print_cmmd(r, label.c_str());
}

/// `metrics A B --fd-dinov2` and/or `--cmmd` alone: those figures and their JSON (no Inception
/// features read).
int own_encoders_only(const MetricsArgs& o) {
  nlohmann::json j = {{"a", o.a}, {"b", o.b}, {"a_role", "generated"}, {"b_role", "real"}};
  if (o.fd_dinov2) fd_dinov2(o, j);
  if (o.cmmd) cmmd_metric(o, j);
  if (!o.json_out.empty()) atomic_write(o.json_out, j.dump(2) + "\n");
  return 0;
}

/// The metrics `o` asks for, checked against its sides; none: all that the sides allow. Whether
/// FD_DINOv2 and CMMD, which embed with their own encoders, are the only ones (their own path).
bool choose_metrics(MetricsArgs& o) {
  const bool two = !o.b.empty();
  if (!two && (o.fid || o.kid || o.prc || o.prdc || o.fd_dinov2 || o.cmmd))
    throw ConfigError(
        "metrics", "--fid, --fd-dinov2, --kid, --cmmd, --prc and --prdc compare two sides: pass B (the real set) too");
  if (o.cmmd_batch > 0 && !o.cmmd) throw ConfigError("--cmmd-batch", "is a setting of --cmmd: pass --cmmd too");
  const bool own_only = (o.fd_dinov2 || o.cmmd) && !(o.isc || o.fid || o.kid || o.prc || o.prdc);
  if (!(o.isc || o.fid || o.kid || o.prc || o.prdc || o.fd_dinov2 || o.cmmd))
    (two ? (o.fid = o.kid = o.prc = o.prdc = true) : (o.isc = true));
  return own_only;
}

}  // namespace

int cmd_metrics(const MetricsArgs& args) {
  MetricsArgs o = args;
  const bool two = !o.b.empty();
  if (choose_metrics(o)) return own_encoders_only(o);
  FeatureInputs inputs(o.m, "metrics");
  const bool like_torch_fidelity = inputs.like() == "torch-fidelity";  // --like's, not a store's
  std::vector<std::string> warnings;
  const std::string pa = inputs.as_features(o.a), pb = two ? inputs.as_features(o.b) : std::string();
  const bool need_sets = o.isc || o.kid || o.prc || o.prdc;
  const char* why = "IS, KID, precision/recall and density/coverage";
  FeatureSet a, b;
  if (need_sets) a = inputs.set_at(pa, why);
  if (need_sets && two) b = inputs.set_at(pb, why);
  if (need_sets && two && a.dim != b.dim)
    throw ConfigError("metrics", pa + " holds vectors of " + std::to_string(a.dim) + " values, " + pb + " of " +
                                     std::to_string(b.dim) + ": they were made by different encoders or layers");
  // FID from the vectors in memory when they are loaded (a store is read and checked once), else
  // from the sides as fid reads them (stats files too)
  std::optional<FeatureStats> sa, sb;
  if (o.fid) {
    sa = need_sets ? compute_stats(a) : inputs.stats_at(pa);
    sb = need_sets ? compute_stats(b) : inputs.stats_at(pb);
  }
  if (two)
    warnings = need_sets ? check_sides(side_of(a), side_of(b), o.allow_mismatch, "metrics", o.fid)
                         : check_sides(side_of(*sa), side_of(*sb), o.allow_mismatch, "metrics", true);
  nlohmann::json j = {{"a", pa}, {"b", pb}, {"a_role", "generated"}, {"b_role", "real"}};
  if (need_sets) j["n_a"] = a.n, j["fingerprint_a"] = a.fingerprint_id, j["weight_source_a"] = a.weight_source.text();
  if (need_sets && two)
    j["n_b"] = b.n, j["fingerprint_b"] = b.fingerprint_id, j["weight_source_b"] = b.weight_source.text();
  std::optional<InceptionScore> is;
  std::optional<FidResult> fid;
  std::optional<KidResult> kid;
  NeighbourMetrics nb;
  if (o.isc) is = isc_of(inputs, a, o, warnings, j);
  if (o.fid) {
    fid = frechet_distance(*sa, *sb);
    j["fid"] = fid->fid;
  }
  if (o.kid) {
    kid = kernel_distance(a, b, o.kid_subsets, o.kid_subset_size, o.seed);
    j["kid"] = {{"mean", kid->mean}, {"std", kid->std}, {"subsets", kid->subsets}, {"subset_size", kid->subset_size}};
  }
  KnnOptions knn;
  knn.row_block = o.row_block;
  knn.prc = like_torch_fidelity ? KnnArithmetic::torch_fidelity : KnnArithmetic::exact;
  if (o.prc || o.prdc) {
    nb = neighbour_metrics(a, b, o.prc ? o.prc_k : 0, o.prdc ? o.prdc_k : 0, knn);
    j.update(to_json(nb));
  }
  const bool synthetic = inputs.synthetic();
  j["synthetic_weights"] = synthetic;
  if (synthetic) j["weights"] = "synthetic weights";
  j["warnings"] = warnings;
  for (const auto& w : warnings) std::cerr << "vecbench metrics: warning: " << w << "\n";
  const nlohmann::json& fp = need_sets ? (a.fingerprint.is_object() ? a.fingerprint : b.fingerprint)
                                       : (sa->fingerprint.is_object() ? sa->fingerprint : sb->fingerprint);
  j["encoder"] = FeatureInputs::encoder_of(fp);
  const std::string tagged = encoder_tag(fp, inputs.encoder()) + (synthetic ? kSyntheticLabel : "");
  const char* label = tagged.c_str();
  if (is) print_is(*is, pa, label);
  if (fid)
    std::printf("%s %.10g%s\n", fd_label(fp, inputs.encoder()).c_str(), fid->fid, synthetic ? kSyntheticLabel : "");
  if (kid)
    std::printf("KID %.10g +- %.3g (%d subsets of %zu)%s\n", kid->mean, kid->std, kid->subsets, kid->subset_size,
                label);
  print_neighbours(nb, label);
  if (o.fd_dinov2) fd_dinov2(o, j);
  if (o.cmmd) cmmd_metric(o, j);
  if (!o.json_out.empty()) atomic_write(o.json_out, j.dump(2) + "\n");
  return 0;
}

#else
int cmd_metrics(const MetricsArgs&) {
  throw Error("vecbench metrics: this build has no LAPACKE/OpenBLAS (apt-get install liblapacke-dev libopenblas-dev)");
}
#endif
}  // namespace vecbench
