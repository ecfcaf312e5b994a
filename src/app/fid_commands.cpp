// `vecbench stats` and `vecbench fid` (include/vecbench/fid/fid.hpp): the research workflow's
// last step without leaving vecbench.
#include <cstdio>
#include <iostream>

#include "vecbench/app/commands.hpp"
#include "vecbench/core/error.hpp"
#include "vecbench/core/fs_util.hpp"
#include "vecbench/core/sha256.hpp"
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

/// `in` as something stats can read: an output folder, a .npy matrix or a .npz as they are; an
/// image folder, list or image is vectorized first (default route and model) into its own store
/// below `store_root` (default: the cache folder's stores/, core/fs_util.hpp's cache_dir),
/// named by the input's canonical path: a rerun resumes it, a changed file is redone.
std::string as_features(const std::string& in, const std::string& store_root) {
  const fs::path p(in);
  std::error_code ec;
  const std::string ext = p.extension().string();
  if (ext == ".npy" || ext == ".npz") return in;
  if (fs::is_directory(p, ec) && (fs::exists(p / "vecbench.json", ec) || !manifest_files(p).empty())) return in;
  if (!fs::exists(p, ec)) throw IoError(in, "no such file or folder");
  const fs::path root = store_root.empty() ? cache_dir() / "stores" : fs::path(store_root);
  VectorizeArgs a;
  a.images = in;
  a.out = (root / sha256_hex(fs::weakly_canonical(p, ec).string()).substr(0, 16)).string();
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

}  // namespace

int cmd_stats(const std::string& in_arg, const std::string& out, const std::string& store_root) {
  const std::string in = as_features(in_arg, store_root);
  const FeatureStats s = compute_stats(in);
  save_stats(out, s);
  std::cout << "stats " << in << ": n=" << s.n << " dim=" << s.dim << " fingerprint "
            << (s.fingerprint_id.empty() ? "none" : s.fingerprint_id) << " -> " << out << "\n";
  return 0;
}

int cmd_fid(const FidArgs& args) {
  FidArgs o = args;
  o.a = as_features(o.a, o.store_root);
  o.b = as_features(o.b, o.store_root);
  const FeatureStats a = stats_of(o.a), b = stats_of(o.b);
  const std::vector<std::string> warnings = check_sides(a, b, o.allow_mismatch);
  for (const auto& w : warnings) std::cerr << "vecbench fid: warning: " << w << "\n";
  const FidResult r = frechet_distance(a, b);
  nlohmann::json j = {{"fid", r.fid},
                      {"n_a", a.n},
                      {"n_b", b.n},
                      {"fingerprint_a", a.fingerprint_id},
                      {"fingerprint_b", b.fingerprint_id},
                      {"mean_term", r.mean_term},
                      {"trace_sqrt", r.trace_sqrt},
                      {"clamped_eigenvalue_s1", r.clamped_s1},
                      {"clamped_eigenvalue_product", r.clamped_product},
                      {"warnings", warnings}};
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
    std::printf("KID %.10g +- %.3g (%d subsets of %zu)\n", k.mean, k.std, k.subsets, k.subset_size);
  }
  if (!o.json_out.empty()) atomic_write(o.json_out, j.dump(2) + "\n");
  std::printf("FID %.10g\n", r.fid);
  return 0;
}

#else
int cmd_stats(const std::string&, const std::string&, const std::string&) {
  throw Error("vecbench stats: this build has no LAPACKE/OpenBLAS (apt-get install liblapacke-dev libopenblas-dev)");
}
int cmd_fid(const FidArgs&) {
  throw Error("vecbench fid: this build has no LAPACKE/OpenBLAS (apt-get install liblapacke-dev libopenblas-dev)");
}
#endif
}  // namespace vecbench
