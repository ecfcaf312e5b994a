// Beyond FID (issue #49), from the same stored pool_3 vectors: the Inception Score (the 1008
// logits are one affine map of pool_3, so the classifier's weights from the model file are applied
// to the stored vectors, in float64, with no second pass of the network), improved precision and
// recall (Kynkaanniemi et al. 2019, as torch-fidelity's prc computes them) and density and
// coverage (Naeem et al. 2020, as the prdc package computes them). The k-nearest-neighbour radii
// and counts are computed in blocks of BLAS GEMM distances: memory is bounded by the block sizes,
// not by N x N.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vecbench/fid/fid.hpp"

namespace vecbench {

/// The classifier after pool_3: logits = weight x + bias (weight: classes x dim, row-major).
struct Classifier {
  int classes = 0, dim = 0;
  std::vector<float> weight, bias;
  std::string sha256;  ///< of the export's two .npy files (their bytes), checked when read
  std::string origin;  ///< the model file
};

/// The classifier stored in the export `model_path` (tools/export_inception.py writes it as the
/// extra files vecbench_fc_weight.npy and vecbench_fc_bias.npy, named in its metadata's
/// "classifier"). Throws ConfigError naming the file when it has none (an export made before
/// classifiers were kept, or weights without fc), IoError when the files are unreadable, of the
/// wrong shape, or do not match the recorded SHA-256.
Classifier load_classifier(const std::string& model_path);

/// numpy.random.RandomState(seed).permutation(n): NumPy's legacy MT19937 stream and its bounded
/// integers (Fisher-Yates from the end), so that the Inception Score's splits hold the rows
/// torch-fidelity's hold.
std::vector<std::size_t> numpy_permutation(std::size_t n, std::uint32_t seed);

struct InceptionScore {
  double mean = 0.0, std = 0.0;  ///< over the splits (std: population, as np.std)
  int splits = 0;
  std::size_t n = 0;
};
/// torch-fidelity 0.4's isc from pool_3 vectors: the unbiased logits W x (its "logits_unbiased")
/// in float64; the rows in the order torch-fidelity reads its files (sorted by path: a store's rows
/// sorted by input name, a matrix's as they are), then shuffled by numpy_permutation(n, seed)
/// when `shuffle`; softmax per row;
/// for each split [i n / s, (i + 1) n / s): exp of the mean over its rows of KL(p || mean p).
/// Throws ConfigError when the classifier's width is not the vectors' or there are fewer rows
/// than splits.
InceptionScore inception_score(const FeatureSet& f, const Classifier& c, int splits = 10, bool shuffle = true,
                               std::uint32_t seed = 2020);

/// How precision and recall's k-NN distances are computed.
enum class KnnArithmetic {
  exact,           ///< float64 (the stored float32 values are exact in it): the figures of the definition
  torch_fidelity,  ///< float32 as torch-fidelity 0.4 gets them (torch_cpu::cdist in its batches of 10,000 rows)
};

/// Block sizes of the distance computations (rows x columns of float64 distances at a time: the
/// memory bound, 32 MB at the defaults). torch-fidelity's arithmetic computes a batch pair at a
/// time instead (up to `torch_batch` x `torch_batch` float32 distances: 400 MB at its default),
/// whose shapes decide its rounding.
struct KnnOptions {
  std::size_t row_block = 1024;
  std::size_t col_block = 4096;
  KnnArithmetic prc = KnnArithmetic::exact;  ///< precision/recall's (density/coverage: always exact)
  std::size_t torch_batch = 10000;           ///< torch-fidelity's prc_batch_size
};

/// For every row of `x`, the distance to its k-th nearest neighbour among the rows of `x` (the
/// (k+1)-th smallest distance, the row itself at distance 0 included, as prdc and torch-fidelity
/// count), float64 Euclidean distances.
std::vector<double> knn_radii(const FeatureSet& x, int k, const KnnOptions& o = {});

/// torch-fidelity's prc (its input1 is the generated set, input2 the real one).
struct PrecisionRecall {
  int k = 3;
  double precision = 0.0;  ///< share of generated rows within (<=) the k-NN radius of some real row
  double recall = 0.0;     ///< share of real rows within (<=) the k-NN radius of some generated row
  double f_score = 0.0;    ///< 2 P R / max(1e-5, P + R)
  KnnArithmetic arithmetic = KnnArithmetic::exact;
  /// torch-fidelity's arithmetic: generated (real) rows that some ball's edge passes within float32
  /// rounding of (8 units of |x|^2 + |y|^2 on either distance): torch-fidelity on another BLAS,
  /// thread count or device may count them otherwise, so its precision (recall) may differ from
  /// this one by up to that many rows.
  std::size_t boundary_generated = 0, boundary_real = 0;
  std::size_t n_generated = 0, n_real = 0;
};
/// prdc.compute_prdc(real, fake, nearest_k) (strict < comparisons, as prdc makes them).
struct Prdc {
  int k = 5;
  double precision = 0.0, recall = 0.0;
  double density = 0.0;   ///< mean over generated rows of (real balls holding it) / k
  double coverage = 0.0;  ///< share of real rows whose nearest generated row is inside their ball
};
struct NeighbourMetrics {
  std::optional<PrecisionRecall> prc;
  std::optional<Prdc> prdc;
};
/// The k-NN metrics of `generated` against `real` in one pass over their distances (plus one over
/// each side's own for its radii); `prc_k` or `prdc_k` 0 leaves that metric out. Two sets always,
/// even when both name the same FeatureSet. With o.prc torch_fidelity, precision and recall as
/// torch-fidelity 0.4's calculate_precision_recall_full computes them on the CPU: the float32
/// distances of torch_cpu::cdist in its batches, the (k+1)-th smallest of each row
/// (torch.kthvalue), <=, and the shares as float32 means.
NeighbourMetrics neighbour_metrics(const FeatureSet& generated, const FeatureSet& real, int prc_k, int prdc_k,
                                   const KnnOptions& o = {});

}  // namespace vecbench
