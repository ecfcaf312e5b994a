// The Inception Score and the k-NN metrics (include/vecbench/fid/metrics.hpp). Distances and
// logits by OpenBLAS's dgemm on float64 copies of row blocks (the stored float32 values are exact
// in float64), so that no N x N matrix is ever held.
#include "vecbench/fid/metrics.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

#include "distance_block.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/npy.hpp"
#include "vecbench/core/files/sha256.hpp"
#include "vecbench/core/files/zip_member.hpp"
#include "vecbench/fid/torch_cdist.hpp"

#include <nlohmann/json.hpp>

namespace vecbench {
namespace {

/// A float32 .npy held in memory (a zip member), its values and shape checked.
std::vector<float> npy_member(const std::string& bytes, const std::string& name, std::vector<std::size_t>& shape) {
  std::istringstream in(bytes);
  const npy::Array head = npy::read_header(in, name);
  if (head.descr != "<f4") throw IoError(name, "expected float32 values, found dtype '" + head.descr + "'");
  const auto offset = static_cast<std::size_t>(in.tellg());
  if (bytes.size() != offset + head.count() * sizeof(float))
    throw IoError(name, "holds " + std::to_string(bytes.size() - offset) + " data bytes, its shape needs " +
                            std::to_string(head.count() * sizeof(float)));
  shape = head.shape;
  std::vector<float> v(head.count());
  std::copy_n(bytes.data() + offset, v.size() * sizeof(float), reinterpret_cast<char*>(v.data()));
  for (const float x : v)
    if (!std::isfinite(x)) throw IoError(name, "holds NaN or Inf");
  return v;
}

/// Whose distances for_each_distance_block computes: between two sets' rows, or among one set's
/// (said by the caller: two sets that hold the same rows, or are the same object, are still two).
enum class Rows { of_two_sets, of_one_set };

/// Squared Euclidean distances between the rows of `a` and of `b`, a block at a time:
/// |x|^2 + |y|^2 - 2 x.y, float64, clamped at 0. `visit(r0, c0, rows, cols, d2)` sees each block
/// once (d2: rows x cols, row-major). Rows::of_one_set (`b` is `a`): the distances are symmetric,
/// only the blocks that hold some pair j > i are visited (the visitor takes each pair once, for
/// both rows), and a row's distance to itself is exactly 0.
template <class Visit>
void for_each_distance_block(const FeatureSet& a, const FeatureSet& b, Rows rows_of, const KnnOptions& o, Visit visit) {
  if (a.dim != b.dim)
    throw ConfigError("metrics", a.origin + " has vectors of " + std::to_string(a.dim) + " values, " + b.origin +
                                     " of " + std::to_string(b.dim));
  const bool self = rows_of == Rows::of_one_set;
  const std::vector<double> na = detail::squared_norms(a), nb = self ? na : detail::squared_norms(b);
  const std::size_t rb = std::max<std::size_t>(1, o.row_block), cb = std::max<std::size_t>(1, o.col_block);
  const int d = a.dim;
  std::vector<double> ra, cbuf, g;
  for (std::size_t r0 = 0; r0 < a.n; r0 += rb) {
    const std::size_t r1 = std::min(a.n, r0 + rb), rows = r1 - r0;
    detail::rows_f64(a, r0, r1, ra);
    for (std::size_t c0 = 0; c0 < b.n; c0 += cb) {
      const std::size_t c1 = std::min(b.n, c0 + cb), cols = c1 - c0;
      if (self && c1 <= r0 + 1) continue;  // every pair of the block has j <= i
      detail::rows_f64(b, c0, c1, cbuf);
      detail::squared_distances(ra, na.data() + r0, rows, cbuf, nb.data() + c0, cols, d, g);
      if (self)  // a row's distance to itself
        for (std::size_t i = 0; i < rows; ++i)
          if (r0 + i >= c0 && r0 + i < c1) g[i * cols + r0 + i - c0] = 0.0;
      visit(r0, c0, rows, cols, static_cast<const double*>(g.data()));
    }
  }
}

/// For each k of `ks`, every row's squared distance to its (k+1)-th nearest row of `x` (itself
/// included), from one pass over x's distances.
std::vector<std::vector<double>> knn_radii_squared(const FeatureSet& x, const std::vector<int>& ks,
                                                   const KnnOptions& o) {
  const int kmax = *std::max_element(ks.begin(), ks.end());
  if (kmax < 1) throw ConfigError("metrics", "the neighbourhood size k must be at least 1");
  if (x.n < static_cast<std::size_t>(kmax) + 1)
    throw ConfigError("metrics", x.origin + " holds " + std::to_string(x.n) + " vectors: k = " + std::to_string(kmax) +
                                     " nearest neighbours need at least " + std::to_string(kmax + 1));
  const std::size_t keep = static_cast<std::size_t>(kmax) + 1;
  std::vector<double> best(x.n * keep, std::numeric_limits<double>::infinity());  // ascending per row
  auto insert = [keep](double* top, double v) {
    if (!(v < top[keep - 1])) return;
    std::size_t p = keep - 1;
    for (; p > 0 && top[p - 1] > v; --p) top[p] = top[p - 1];
    top[p] = v;
  };
  for (std::size_t i = 0; i < x.n; ++i) best[i * keep] = 0.0;  // the row itself
  // each pair j > i once, for both rows: half the distances of the full square
  for_each_distance_block(x, x, Rows::of_one_set, o,
                          [&](std::size_t r0, std::size_t c0, std::size_t rows, std::size_t cols, const double* d2) {
                            for (std::size_t i = 0; i < rows; ++i) {
                              const std::size_t ri = r0 + i;
                              double* top = best.data() + ri * keep;
                              const double* di = d2 + i * cols;
                              for (std::size_t j = ri + 1 > c0 ? ri + 1 - c0 : 0; j < cols; ++j) {
                                insert(top, di[j]);
                                insert(best.data() + (c0 + j) * keep, di[j]);
                              }
                            }
                          });
  std::vector<std::vector<double>> out;
  for (const int k : ks) {
    std::vector<double> r(x.n);
    for (std::size_t i = 0; i < x.n; ++i) r[i] = best[i * keep + static_cast<std::size_t>(k)];
    out.push_back(std::move(r));
  }
  return out;
}

/// A set's rows as torch-fidelity's arithmetic sees them: each row's float32 norm (torch's
/// x.pow(2).sum(-1)) and, once torch_radii ran, its k-th neighbour's float32 distance.
struct TorchSide {
  explicit TorchSide(const FeatureSet& x) : f(x), norms(x.n) {
    for (std::size_t i = 0; i < x.n; ++i) norms[i] = torch_cpu::row_sq_norm(row(i), static_cast<std::size_t>(x.dim));
  }
  const float* row(std::size_t i) const { return f.x.data() + i * static_cast<std::size_t>(f.dim); }
  /// torch_cpu::cdist of this set's rows [r0, r0 + rows) and `other`'s [c0, c0 + cols) into `d`.
  void cdist(std::size_t r0, std::size_t rows, const TorchSide& other, std::size_t c0, std::size_t cols,
             std::vector<float>& d) const {
    torch_cpu::cdist(row(r0), &norms[r0], rows, other.row(c0), &other.norms[c0], cols, static_cast<std::size_t>(f.dim),
                     d);
  }
  const FeatureSet& f;
  std::vector<float> norms, radii;
};

/// torch-fidelity's calc_cdist_full(x, x, batch).kthvalue(k + 1): every batch pair's float32
/// distances (the shapes torch.cdist saw), each row's (k+1)-th smallest.
void torch_radii(TorchSide& s, int k, std::size_t batch) {
  const std::size_t n = s.f.n, keep = static_cast<std::size_t>(k) + 1;
  if (n < keep)
    throw ConfigError("metrics", s.f.origin + " holds " + std::to_string(n) + " vectors: k = " + std::to_string(k) +
                                     " nearest neighbours need at least " + std::to_string(k + 1));
  std::vector<float> best(n * keep, std::numeric_limits<float>::infinity()), d;
  for (std::size_t r0 = 0; r0 < n; r0 += batch) {
    const std::size_t rows = std::min(batch, n - r0);
    for (std::size_t c0 = 0; c0 < n; c0 += batch) {
      const std::size_t cols = std::min(batch, n - c0);
      s.cdist(r0, rows, s, c0, cols, d);
      for (std::size_t i = 0; i < rows; ++i) {
        float* top = best.data() + (r0 + i) * keep;
        for (std::size_t j = 0; j < cols; ++j) {
          const float v = d[i * cols + j];
          if (!(v < top[keep - 1])) continue;
          std::size_t p = keep - 1;
          for (; p > 0 && top[p - 1] > v; --p) top[p] = top[p - 1];
          top[p] = v;
        }
      }
    }
  }
  s.radii.resize(n);
  for (std::size_t i = 0; i < n; ++i) s.radii[i] = best[i * keep + keep - 1];
}

/// Who is inside some ball of the other set, and who is within rounding of a ball's edge:
/// `in` by the float32 comparison itself, `sure` inside with room to spare, `maybe` inside or
/// within rounding outside (a boundary row is maybe but not sure).
struct BallCount {
  BallCount(const TorchSide& centres, std::size_t points) : in(points, 0), sure(points, 0), maybe(points, 0) {
    // a squared distance |x|^2 + |y|^2 - 2 x.y in float32 is off by a few units of |x|^2 + |y|^2
    // (measured: under 3 on 2048-value features); 8 units on the ball's radius and on the distance
    for (std::size_t c = 0; c < centres.f.n; ++c) {
      const double n = centres.norms[c], r = centres.radii[c], far = std::sqrt(n) + r;
      r2.push_back(r * r);
      slack.push_back(kUnits * (2 * n + far * far));
    }
  }
  /// Row `p` (its norm `np`) at float32 distance `v` from centre `c`, whose radius is `radius`.
  void see(std::size_t p, float np, std::size_t c, float v, float radius) {
    if (v <= radius) in[p] = 1;
    const double v2 = static_cast<double>(v) * v, tol = slack[c] + kUnits * np;
    if (v2 <= r2[c] - tol) sure[p] = 1;
    if (v2 <= r2[c] + tol) maybe[p] = 1;
  }
  /// torch's .float().mean(): float32 count / n.
  double share() const {
    const auto k = static_cast<float>(std::count(in.begin(), in.end(), 1));
    return static_cast<double>(k / static_cast<float>(in.size()));
  }
  std::size_t boundary() const {
    std::size_t b = 0;
    for (std::size_t i = 0; i < in.size(); ++i) b += maybe[i] && !sure[i];
    return b;
  }
  static constexpr double kUnits = 8.0 / 16777216.0;  // 8 units of float32 rounding (2^-24)
  std::vector<char> in, sure, maybe;
  std::vector<double> r2, slack;
};

/// torch-fidelity 0.4's calculate_precision_recall_full on the CPU: dist_2_1 = cdist(real, gen)
/// in batch pairs, recall: real rows with some dist_2_1 <= the generated radius, precision:
/// generated rows with some dist_1_2 = dist_2_1^T <= the real radius.
PrecisionRecall torch_fidelity_prc(const FeatureSet& generated, const FeatureSet& real, int k, std::size_t batch) {
  if (generated.dim != real.dim)
    throw ConfigError("metrics", generated.origin + " has vectors of " + std::to_string(generated.dim) + " values, " +
                                     real.origin + " of " + std::to_string(real.dim));
  batch = std::max<std::size_t>(1, batch);
  TorchSide g(generated), r(real);
  torch_radii(g, k, batch);
  torch_radii(r, k, batch);
  BallCount gen_in_real(r, g.f.n), real_in_gen(g, r.f.n);
  std::vector<float> d;
  for (std::size_t r0 = 0; r0 < r.f.n; r0 += batch) {
    const std::size_t rows = std::min(batch, r.f.n - r0);
    for (std::size_t c0 = 0; c0 < g.f.n; c0 += batch) {
      const std::size_t cols = std::min(batch, g.f.n - c0);
      r.cdist(r0, rows, g, c0, cols, d);
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) {
          const std::size_t ri = r0 + i, gj = c0 + j;
          const float v = d[i * cols + j];
          gen_in_real.see(gj, g.norms[gj], ri, v, r.radii[ri]);
          real_in_gen.see(ri, r.norms[ri], gj, v, g.radii[gj]);
        }
    }
  }
  PrecisionRecall p;
  p.k = k;
  p.arithmetic = KnnArithmetic::torch_fidelity;
  p.precision = gen_in_real.share();
  p.recall = real_in_gen.share();
  p.f_score = 2 * p.precision * p.recall / std::max(1e-5, p.precision + p.recall);
  p.boundary_generated = gen_in_real.boundary();
  p.boundary_real = real_in_gen.boundary();
  p.n_generated = generated.n;
  p.n_real = real.n;
  return p;
}

double share(const std::vector<char>& flags) {
  return flags.empty()
             ? 0.0
             : static_cast<double>(std::count(flags.begin(), flags.end(), 1)) / static_cast<double>(flags.size());
}

}  // namespace

Classifier load_classifier(const std::string& model_path) {
  std::string text;
  if (!read_stored_zip_member(model_path, "extra/vecbench_meta.json", text))
    throw ConfigError(model_path,
                      "not a model of tools/export_inception.py (no vecbench_meta.json): its "
                      "classifier cannot be read");
  const auto meta = nlohmann::json::parse(text, nullptr, false);
  if (meta.is_discarded() || !meta.is_object()) throw IoError(model_path, "vecbench_meta.json is not JSON");
  const auto it = meta.find("classifier");
  if (it == meta.end() || !it->is_object())
    throw ConfigError(model_path,
                      "has no classifier after pool_3 (exported before classifiers were kept, or from weights "
                      "without fc): the Inception Score needs the logits; export it again with "
                      "tools/export_inception.py (a FID tool's preset model is imported again when deleted from "
                      "the cache's models/)");
  Classifier c;
  c.origin = model_path;
  std::string wb, bb;
  const std::string wname = it->value("weight", std::string()), bname = it->value("bias", std::string());
  if (wname.empty() || bname.empty() || !read_stored_zip_member(model_path, "extra/" + wname, wb) ||
      !read_stored_zip_member(model_path, "extra/" + bname, bb))
    throw IoError(model_path, "its classifier's files (" + wname + ", " + bname + ") cannot be read");
  const std::string want = it->value("sha256", std::string());
  c.sha256 = sha256_hex(wb + bb);
  if (c.sha256 != want)
    throw IoError(model_path, "its classifier's files do not match the SHA-256 its metadata records (" + want +
                                  "): the file is damaged");
  std::vector<std::size_t> ws, bs;
  c.weight = npy_member(wb, model_path + ": " + wname, ws);
  c.bias = npy_member(bb, model_path + ": " + bname, bs);
  if (ws.size() != 2 || bs.size() != 1 || bs[0] != ws[0] || ws[0] == 0)
    throw IoError(model_path, "its classifier has weight and bias of mismatched shapes");
  c.classes = static_cast<int>(ws[0]);
  c.dim = static_cast<int>(ws[1]);
  return c;
}

std::vector<std::size_t> numpy_permutation(std::size_t n, std::uint32_t seed) {
  std::mt19937 mt(seed);  // NumPy's RandomState(int) seeds MT19937 with init_genrand, as this does
  std::vector<std::size_t> p(n);
  std::iota(p.begin(), p.end(), std::size_t{0});
  for (std::size_t i = n; i-- > 1;) {  // legacy shuffle: random_interval(i) for i = n-1 .. 1
    std::uint64_t mask = i;
    for (int s = 1; s <= 32; s *= 2) mask |= mask >> s;
    std::uint64_t v;
    if (i <= 0xffffffffull) {
      do v = mt() & mask;
      while (v > i);
    } else {
      do {
        const std::uint64_t hi = mt();
        v = ((hi << 32) | mt()) & mask;
      } while (v > i);
    }
    std::swap(p[i], p[static_cast<std::size_t>(v)]);
  }
  return p;
}

InceptionScore inception_score(const FeatureSet& f, const Classifier& c, int splits, bool shuffle, std::uint32_t seed) {
  if (c.dim != f.dim)
    throw ConfigError("--isc", c.origin + "'s classifier takes vectors of " + std::to_string(c.dim) + " values, " +
                                   f.origin + " holds vectors of " + std::to_string(f.dim));
  if (splits < 1 || f.n < static_cast<std::size_t>(splits))
    throw ConfigError("--isc", f.origin + " holds " + std::to_string(f.n) + " vectors, fewer than the " +
                                   std::to_string(splits) + " splits");
  // torch-fidelity's order: its files sorted by path (a store's rows by input name), then shuffled
  std::vector<std::size_t> sorted(f.n), order(f.n);
  std::iota(sorted.begin(), sorted.end(), std::size_t{0});
  if (f.names.size() == f.n)
    std::stable_sort(sorted.begin(), sorted.end(),
                     [&](std::size_t i, std::size_t j) { return f.names[i] < f.names[j]; });
  const std::vector<std::size_t> perm = shuffle ? numpy_permutation(f.n, seed) : sorted;
  for (std::size_t i = 0; i < f.n; ++i) order[i] = shuffle ? sorted[perm[i]] : sorted[i];
  const std::size_t d = f.dim, k = c.classes, chunk = 1024;
  const std::vector<double> w(c.weight.begin(), c.weight.end());
  std::vector<double> x, logits, q(k);
  std::vector<double> scores;
  for (int s = 0; s < splits; ++s) {
    const std::size_t b = s * f.n / splits, e = (s + 1) * f.n / splits;
    std::fill(q.begin(), q.end(), 0.0);
    double neg_entropy = 0.0;  // sum over the split's rows of sum_c p log p
    for (std::size_t r0 = b; r0 < e; r0 += chunk) {
      const std::size_t rows = std::min(e, r0 + chunk) - r0;
      x.resize(rows * d);
      for (std::size_t i = 0; i < rows; ++i) {
        const float* src = f.x.data() + order[r0 + i] * d;
        std::copy(src, src + d, x.begin() + static_cast<std::ptrdiff_t>(i * d));
      }
      logits.resize(rows * k);
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), static_cast<int>(k),
                  static_cast<int>(d), 1.0, x.data(), static_cast<int>(d), w.data(), static_cast<int>(d), 0.0,
                  logits.data(), static_cast<int>(k));
      for (std::size_t i = 0; i < rows; ++i) {
        const double* l = logits.data() + i * k;
        const double m = *std::max_element(l, l + k);
        double z = 0.0;
        for (std::size_t j = 0; j < k; ++j) z += std::exp(l[j] - m);
        const double log_z = std::log(z);
        for (std::size_t j = 0; j < k; ++j) {
          const double log_p = l[j] - m - log_z, p = std::exp(log_p);
          q[j] += p;
          neg_entropy += p * log_p;
        }
      }
    }
    // mean over rows of KL(p || q) = mean sum p log p - sum q log q, q the rows' mean p
    const double rows = static_cast<double>(e - b);
    double cross = 0.0;
    for (std::size_t j = 0; j < k; ++j) {
      const double qj = q[j] / rows;
      if (qj > 0) cross += qj * std::log(qj);
    }
    scores.push_back(std::exp(neg_entropy / rows - cross));
  }
  InceptionScore r;
  r.splits = splits;
  r.n = f.n;
  for (const double v : scores) r.mean += v;
  r.mean /= splits;
  for (const double v : scores) r.std += (v - r.mean) * (v - r.mean);
  r.std = std::sqrt(r.std / splits);
  return r;
}

std::vector<double> knn_radii(const FeatureSet& x, int k, const KnnOptions& o) {
  std::vector<double> r = knn_radii_squared(x, {k}, o)[0];
  for (double& v : r) v = std::sqrt(v);
  return r;
}

NeighbourMetrics neighbour_metrics(const FeatureSet& generated, const FeatureSet& real, int prc_k, int prdc_k,
                                   const KnnOptions& o) {
  NeighbourMetrics out;
  if (prc_k > 0 && o.prc == KnnArithmetic::torch_fidelity) {
    out = neighbour_metrics(generated, real, 0, prdc_k, o);
    out.prc = torch_fidelity_prc(generated, real, prc_k, o.torch_batch);
    return out;
  }
  if (prc_k <= 0 && prdc_k <= 0) return out;
  std::vector<int> ks;
  if (prc_k > 0) ks.push_back(prc_k);
  if (prdc_k > 0) ks.push_back(prdc_k);
  const auto rr = knn_radii_squared(real, ks, o), rg = knn_radii_squared(generated, ks, o);
  const std::vector<double>* r3_real = prc_k > 0 ? &rr[0] : nullptr;
  const std::vector<double>* r3_gen = prc_k > 0 ? &rg[0] : nullptr;
  const std::vector<double>* r5_real = prdc_k > 0 ? &rr.back() : nullptr;
  const std::vector<double>* r5_gen = prdc_k > 0 ? &rg.back() : nullptr;
  std::vector<char> gen_in3(generated.n, 0), real_in3(real.n, 0), gen_in5(generated.n, 0), real_in5(real.n, 0);
  std::vector<std::uint64_t> count5(generated.n, 0);
  std::vector<double> nearest(real.n, std::numeric_limits<double>::infinity());
  for_each_distance_block(real, generated, Rows::of_two_sets, o,
                          [&](std::size_t r0, std::size_t c0, std::size_t rows, std::size_t cols, const double* d2) {
                            for (std::size_t i = 0; i < rows; ++i) {
                              const std::size_t ri = r0 + i;
                              const double* di = d2 + i * cols;
                              if (r3_real) {
                                const double ball = (*r3_real)[ri];
                                char in = real_in3[ri];
                                for (std::size_t j = 0; j < cols; ++j) {
                                  const double v = di[j];
                                  if (v <= ball) gen_in3[c0 + j] = 1;
                                  if (v <= (*r3_gen)[c0 + j]) in = 1;
                                }
                                real_in3[ri] = in;
                              }
                              if (r5_real) {
                                const double ball = (*r5_real)[ri];
                                char in = real_in5[ri];
                                double m = nearest[ri];
                                for (std::size_t j = 0; j < cols; ++j) {
                                  const double v = di[j];
                                  if (v < ball) gen_in5[c0 + j] = 1, ++count5[c0 + j];
                                  if (v < (*r5_gen)[c0 + j]) in = 1;
                                  m = std::min(m, v);
                                }
                                real_in5[ri] = in;
                                nearest[ri] = m;
                              }
                            }
                          });
  if (prc_k > 0) {
    PrecisionRecall p;
    p.k = prc_k;
    p.precision = share(gen_in3);
    p.recall = share(real_in3);
    p.f_score = 2 * p.precision * p.recall / std::max(1e-5, p.precision + p.recall);
    p.n_generated = generated.n;
    p.n_real = real.n;
    out.prc = p;
  }
  if (prdc_k > 0) {
    Prdc p;
    p.k = prdc_k;
    p.precision = share(gen_in5);
    p.recall = share(real_in5);
    const double total = std::accumulate(count5.begin(), count5.end(), 0.0);
    p.density = total / static_cast<double>(prdc_k) / static_cast<double>(generated.n);
    std::size_t covered = 0;
    for (std::size_t i = 0; i < real.n; ++i) covered += nearest[i] < (*r5_real)[i];
    p.coverage = static_cast<double>(covered) / static_cast<double>(real.n);
    out.prdc = p;
  }
  return out;
}

}  // namespace vecbench
