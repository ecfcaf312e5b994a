// CMMD (Jayasumana et al., "Rethinking FID", CVPR 2024; google-research/cmmd): the squared MMD of
// two sets of image embeddings under a Gaussian kernel, in float64, a block of rows at a time
// (memory bounded by the block size, not by N x M) on every core.
#pragma once
#include <cstddef>
#include <filesystem>
#include <optional>
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
  /// Whether a side's own term came from the CmmdTermCache (not computed in this call).
  bool aa_from_cache = false, bb_from_cache = false;
};

/// Where each side's own kernel term (mean k(x, x') - 1 over its N^2 pairs: most of CMMD's cost
/// against a large reference set, hours for 1.28M rows where the cross term of 50,000 generated
/// images takes minutes) is kept between runs. Keyed by what the term is computed from: the SHA-256
/// of the rows used, in their order (their float32 bytes), their count and width, sigma, the block
/// size (the sum's rounding depends on it; not on the thread count), OpenBLAS's configuration and
/// kernel for this CPU (its dgemm) and the C library's version (expm1): so a term read back has
/// the bits this machine would compute, and another machine's is not taken. One small JSON file a
/// term, written whole (atomic_write); a file that does not parse, names another key or fails its
/// check is as if it were not there.
class CmmdTermCache {
 public:
  explicit CmmdTermCache(std::filesystem::path dir) : dir_(std::move(dir)) {}
  /// The term kept under `key`, if a sound file holds it.
  std::optional<double> find(const std::string& key) const;
  /// Keeps `term` under `key`; false (nothing kept) when the folder cannot be written.
  bool keep(const std::string& key, double term) const;
  std::filesystem::path file_of(const std::string& key) const { return dir_ / (key + ".json"); }

 private:
  std::filesystem::path dir_;
};

/// google-research/cmmd's distance.mmd of `a` and `b` (its x and y; the formula is symmetric):
/// the biased estimator with the diagonals, not square-rooted, times the scale. The embeddings
/// are used as stored (the encoder L2-normalizes them). Independent of the block size and the
/// thread count up to float64 rounding, and bit for bit of the thread count. ConfigError when the
/// widths differ, a side has no row (or none left with o.batch), or sigma/scale are not positive.
/// With `cache`, each side's own term is read from it when there, else computed and kept there:
/// the same bits either way.
CmmdResult cmmd(const FeatureSet& a, const FeatureSet& b, const CmmdOptions& o = {},
                const CmmdTermCache* cache = nullptr);

/// The smallest and largest L2 norm of `f`'s rows, in float64 (CMMD's reference embeds unit
/// vectors: a side whose rows are not is worth a warning). {0, 0} for no row.
std::pair<double, double> row_norm_range(const FeatureSet& f);

}  // namespace vecbench
