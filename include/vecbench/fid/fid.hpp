// FID and KID from stored features (issue #28): streaming float64 statistics (mu, sigma) of an
// output folder or a feature matrix, their .npz files in pytorch-fid's / TTUR's keys, the Frechet
// distance by symmetric eigendecompositions (LAPACK), and clean-fid's kernel distance.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vecbench/core/base/weight_source.hpp"

namespace vecbench {

/// Mean and covariance of N feature vectors, float64 (sigma row-major dim x dim, divided by N-1).
struct FeatureStats {
  std::int64_t n = 0;
  int dim = 0;
  std::vector<double> mu, sigma;
  std::string fingerprint_id;            ///< "" when the source had none (a foreign stats file)
  nlohmann::json fingerprint = nullptr;  ///< the fingerprint's fields, when known
  WeightSource weight_source;            ///< the model's weight source (unknown for a foreign file)
  std::string origin;                    ///< the file or folder, for messages
};

/// Feature vectors in memory (KID needs them, not only their statistics).
struct FeatureSet {
  std::size_t n = 0;
  int dim = 0;
  std::vector<float> x;  ///< n x dim, row-major
  /// Each row's input as its store's manifest names it (empty for a .npy matrix): the Inception
  /// Score orders rows by it, as torch-fidelity orders files by their sorted paths.
  std::vector<std::string> names;
  std::string fingerprint_id;
  nlohmann::json fingerprint = nullptr;
  WeightSource weight_source;
  std::string origin;
};

/// Calls `row` with every feature vector of `path`: an output folder of vectorize (the newest ok
/// line of each input of the folder's fingerprint) or a float32 .npy matrix [N, dim]. Sets
/// `fp_id`, `fields` (and `weight_source`, when given) from the folder's vecbench.json. Every
/// stored vector is checked against its manifest line's checksum as it is read: a folder with
/// vectors that fail it is refused (IoError naming how many and the first), after the others
/// were passed to `row`. Throws naming the file and the cause. `names`, when given, gets each
/// row's input name (a store's rows only).
void for_each_feature(const std::filesystem::path& path, const std::function<void(const float*, int)>& row,
                      std::string& fp_id, nlohmann::json& fields, WeightSource* weight_source = nullptr,
                      std::vector<std::string>* names = nullptr);

/// Streams `path`'s features into their statistics (the vectors are never all in memory; a
/// store's index of newest manifest lines is: ~0.6 KB per input).
FeatureStats compute_stats(const std::filesystem::path& path);
/// The statistics of features already in memory (the same rows in the same order give the same
/// bits as compute_stats of their file).
FeatureStats compute_stats(const FeatureSet& f);
/// All of `path`'s features (KID, the metrics); IoError naming the file (and the row, and a
/// store's input) when one holds NaN or Inf, as compute_stats refuses it.
FeatureSet load_features(const std::filesystem::path& path);

/// `mu`, `sigma` (float64; pytorch-fid's and TTUR's keys), `n`, `fingerprint_id`, `fingerprint`
/// (its fields as JSON), `weight_source` and `vecbench_version` (extra members a reader may ignore).
void save_stats(const std::filesystem::path& path, const FeatureStats& s);
/// A stats .npz of vecbench, pytorch-fid, TTUR or clean-fid: needs `mu` (d,) and `sigma` (d, d),
/// finite; the rest is optional.
FeatureStats load_stats(const std::filesystem::path& path);
/// The statistics of `path`: EDM2's reference .pkl (`encoder`'s key, load_edm2_stats), a .npz of
/// statistics (load_stats: vecbench's, pytorch-fid's, TTUR's, clean-fid's, ADM's reference
/// batches), else compute_stats of the folder, .npy matrix or .npz of features (npz_holds_features).
/// `encoder` "" means inception-v3.
FeatureStats stats_of(const std::filesystem::path& path, const std::string& encoder = "");
/// True when `path` is a .npz of feature vectors, not of statistics: dgm-eval's saved
/// representations (`reps`, float64 [N, dim]) or clean-fid's KID features (`feats`).
/// for_each_feature and load_features read its rows (as float32).
bool npz_holds_features(const std::filesystem::path& path);

/// EDM2's key for `encoder`'s statistics in its reference .pkl: "fid" for inception-v3 (and ""),
/// "fd_dinov2" for dinov2-vit-l-14; ConfigError for any other encoder.
std::string edm2_key(const std::string& encoder);
/// `encoder`'s statistics from EDM2's reference .pkl (read by pickle::read, which refuses anything
/// but NumPy arrays in dicts): `mu` and `sigma` under edm2_key(encoder); n from `num_images`.
FeatureStats load_edm2_stats(const std::filesystem::path& path, const std::string& encoder);
/// Writes `s` into the EDM2 reference .pkl `path` under edm2_key(encoder) (mu, sigma float64;
/// `num_images`), atomically. A `path` that is already one keeps its other keys (another
/// encoder's statistics); one of another number of images, or a file that is not an EDM2
/// reference, is refused, nothing written.
void save_edm2_stats(const std::filesystem::path& path, const FeatureStats& s, const std::string& encoder);

struct FidResult {
  double fid = 0.0;
  double mean_term = 0.0;        ///< |mu1 - mu2|^2
  double trace_sqrt = 0.0;       ///< tr sqrt(S1^1/2 S2 S1^1/2)
  double clamped_s1 = 0.0;       ///< the most negative eigenvalue of S1 set to 0 (0: none)
  double clamped_product = 0.0;  ///< the most negative eigenvalue of S1^1/2 S2 S1^1/2 set to 0
};
/// FID = |mu1-mu2|^2 + tr(S1) + tr(S2) - 2 tr sqrt(S1^1/2 S2 S1^1/2), float64; the square roots
/// from symmetric eigendecompositions (LAPACKE_dsyevd), negative eigenvalues clamped to 0.
FidResult frechet_distance(const FeatureStats& a, const FeatureStats& b);

struct KidResult {
  double mean = 0.0, std = 0.0;  ///< over the subsets (std: population, 0 for one subset)
  int subsets = 0;
  std::size_t subset_size = 0;
};
/// clean-fid's KID: unbiased MMD^2 with the kernel (x.y/d + 1)^3, averaged over `subsets` random
/// subsets of `subset_size` vectors of each side (capped at the smaller side; drawn without
/// replacement, seeded). One subset of both whole sets gives the full-set unbiased value.
KidResult kernel_distance(const FeatureSet& a, const FeatureSet& b, int subsets, std::size_t subset_size,
                          std::uint64_t seed);

}  // namespace vecbench
