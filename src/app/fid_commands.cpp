// `vecbench stats` and `vecbench fid` (include/vecbench/fid/fid.hpp): the research workflow's
// last step without leaving vecbench.
#include <cstdio>
#include <iostream>

#include <optional>

#include "fid_inputs.hpp"
#include "vecbench/app/commands.hpp"
#include "vecbench/app/fid_presets.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/files/sha256.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/fid/fid.hpp"
#include "vecbench/output/fingerprint.hpp"
#include "vecbench/output/manifest.hpp"

namespace vecbench {
#ifdef VECBENCH_WITH_FID
using namespace fid_inputs;

int cmd_stats(const StatsArgs& args) {
  FeatureInputs inputs(args.m, "stats");
  std::string in;
  const FeatureStats s = inputs.stats(args.in, in);
  if (fs::path(args.out).extension() == ".pkl")  // EDM2's reference: under the encoder's key
    save_edm2_stats(args.out, s,
                    inputs.encoder().empty() ? FeatureInputs::encoder_of(s.fingerprint) : inputs.encoder());
  else
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
  const std::vector<std::string> warnings = check_sides(side_of(a), side_of(b), o.allow_mismatch);
  for (const auto& w : warnings) std::cerr << "vecbench fid: warning: " << w << "\n";
  const FidResult r = frechet_distance(a, b);
  const bool synthetic = inputs.synthetic();
  nlohmann::json j = {{"fid", r.fid},
                      {"a", o.a},  // what each side was read from: an image folder's store, a file
                      {"b", o.b},
                      {"n_a", a.n},
                      {"n_b", b.n},
                      {"fingerprint_a", a.fingerprint_id},
                      {"fingerprint_b", b.fingerprint_id},
                      {"weight_source_a", a.weight_source.text()},
                      {"weight_source_b", b.weight_source.text()},
                      {"synthetic_weights", synthetic},
                      {"like", a.fingerprint.is_object() ? a.fingerprint.value("like", std::string()) : ""},
                      {"encoder", FeatureInputs::encoder_of(a.fingerprint)},
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
    for (const std::string& side : {o.a, o.b}) {  // a stats file (.npz of mu and sigma, an EDM2 .pkl) has no features
      const std::string ext = fs::path(side).extension().string();
      if (ext == ".pkl" || (ext == ".npz" && !npz_holds_features(side)))
        throw ConfigError("--kid", side + ": KID needs the features themselves, not a stats file");
    }
    const KidResult k =
        kernel_distance(load_features(o.a), load_features(o.b), o.kid_subsets, o.kid_subset_size, o.seed);
    j["kid"] = k.mean;
    j["kid_std"] = k.std;
    j["kid_subsets"] = k.subsets;
    j["kid_subset_size"] = k.subset_size;
    std::printf("KID %.10g +- %.3g (%d subsets of %zu)%s%s\n", k.mean, k.std, k.subsets, k.subset_size,
                encoder_tag(a.fingerprint, inputs.encoder()).c_str(), synthetic ? kSyntheticLabel : "");
  }
  if (!o.json_out.empty()) atomic_write(o.json_out, j.dump(2) + "\n");
  std::printf("%s %.10g%s\n", fd_label(a.fingerprint, inputs.encoder()).c_str(), r.fid,
              synthetic ? kSyntheticLabel : "");
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
