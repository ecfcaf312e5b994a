// CMMD (Jayasumana et al., "Rethinking FID", CVPR 2024; google-research/cmmd): the squared MMD of
// two sets of image embeddings under a Gaussian kernel, in float64, a block of rows at a time
// (memory bounded by the block size, not by N x M) on every core.
#pragma once
#include <cstddef>
#include <string>
#include <utility>

#include "vecbench/fid/fid.hpp"

namespace vecbench {

struct CmmdOptions {
  double sigma = 10.0;    ///< k(x, y) = exp(-|x - y|^2 / (2 sigma^2)): the reference's _SIGMA
  double scale = 1000.0;  ///< the reference's _SCALE
  /// The reference's batch size: it embeds images in batches with drop_remainder, so the rows past
  /// the last full batch of each side (in its reading order, a store's rows sorted by input name
  /// as the reference sorts its files) are left out. 0: every row (the metric's definition).
  std::size_t batch = 0;
  std::size_t block = 1024;  ///< rows per block: 2 x block x block float64 distances per thread
  int threads = 0;           ///< threads over the blocks; 0: every core
};

struct CmmdResult {
  double value = 0.0;  ///< scale x (mean k(a, a') + mean k(b, b') - 2 mean k(a, b)), the diagonals included
  double sigma = 0.0, scale = 0.0;
  std::size_t n_a = 0, n_b = 0;        ///< the rows each side has
  std::size_t used_a = 0, used_b = 0;  ///< the rows it was computed from (fewer with a batch)
  std::size_t batch = 0;
  /// The kernel means, minus 1 (the sums are of expm1, which keeps their digits: every kernel
  /// value is within a few per cent of 1 on L2-normalized embeddings).
  double mean_aa_minus_1 = 0.0, mean_bb_minus_1 = 0.0, mean_ab_minus_1 = 0.0;
};

/// google-research/cmmd's distance.mmd of `a` and `b` (its x and y; the formula is symmetric):
/// the biased estimator with the diagonals, not square-rooted, times the scale. The embeddings
/// are used as stored (the encoder L2-normalizes them). Independent of the block size and the
/// thread count up to float64 rounding, and bit for bit of the thread count. ConfigError when the
/// widths differ, a side has no row (or none left with o.batch), or sigma/scale are not positive.
CmmdResult cmmd(const FeatureSet& a, const FeatureSet& b, const CmmdOptions& o = {});

/// The smallest and largest L2 norm of `f`'s rows, in float64 (CMMD's reference embeds unit
/// vectors: a side whose rows are not is worth a warning). {0, 0} for no row.
std::pair<double, double> row_norm_range(const FeatureSet& f);

}  // namespace vecbench
