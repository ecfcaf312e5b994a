// CMMD from stored embeddings (include/vecbench/fid/cmmd.hpp). The three kernel sums are taken
// over blocks of rows: the float64 Gram block of two row blocks by OpenBLAS's dgemm (the stored
// float32 values are exact in float64), the squared distances |x|^2 + |y|^2 - 2 x.y, and the sum of
// expm1(-gamma d^2) over the block. Summing expm1, not exp, keeps the digits the result is made of:
// the kernel values are all close to 1 and CMMD is a small difference of their means. The blocks
// are shared among threads (OpenBLAS on one thread meanwhile), each block's sum lands in its own
// slot, and the slots are added in a fixed order: the same bits for any thread count.
#include "vecbench/fid/cmmd.hpp"

#include <gnu/libc-version.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <limits>
#include <mutex>
#include <numeric>
#include <system_error>
#include <thread>
#include <vector>

#include "distance_block.hpp"

#include <nlohmann/json.hpp>
#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/files/sha256.hpp"
#include "vecbench/core/run/device.hpp"

// OpenBLAS's own (its cblas.h declares them; a cblas.h of another BLAS found first may not).
// The dgemm itself: distance_block.hpp.
extern "C" {
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char* openblas_get_config(void);
char* openblas_get_corename(void);
}

namespace vecbench {
namespace {

/// The rows of one side the metric reads: every row, or with `batch` the reference's full batches
/// in its reading order (a store's rows sorted by input name, as it sorts its files; a matrix's as
/// they are), with their float64 squared norms.
struct Side {
  const FeatureSet* f = nullptr;
  std::vector<std::size_t> rows;
  std::vector<double> norms;

  Side(const FeatureSet& set, std::size_t batch) : f(&set), rows(set.n) {
    std::iota(rows.begin(), rows.end(), std::size_t{0});
    if (batch > 0) {
      if (set.names.size() == set.n)
        std::stable_sort(rows.begin(), rows.end(),
                         [&](std::size_t i, std::size_t j) { return set.names[i] < set.names[j]; });
      rows.resize(set.n / batch * batch);
    }
    norms = detail::squared_norms(set, &rows);
  }
  std::size_t size() const { return rows.size(); }
  /// Rows [r0, r1) as float64, row-major.
  void gather(std::size_t r0, std::size_t r1, std::vector<double>& out) const {
    detail::rows_f64(*f, r0, r1, out, &rows);
  }
};

/// One block of the kernel matrix: rows [r0, r0 + rb) of x against rows [c0, c0 + cb) of y; its
/// sum counts `weight` times (2 for a block of one side's matrix above its diagonal: the one below
/// is its transpose).
struct Block {
  std::size_t r0, c0;
  double weight;
};

/// Per thread: the float64 rows of both blocks and their Gram block.
struct Scratch {
  std::vector<double> xr, yr, g;
};

/// The sum of expm1(-gamma |x - y|^2) over one block; `diagonal`: the block's rows are its columns
/// (a row's distance to itself is exactly 0 there, as in the definition).
double block_sum(const Side& x, const Side& y, const Block& b, std::size_t block, double gamma, bool diagonal,
                 Scratch& s) {
  const std::size_t r1 = std::min(x.size(), b.r0 + block), c1 = std::min(y.size(), b.c0 + block);
  const std::size_t rows = r1 - b.r0, cols = c1 - b.c0;
  const int d = x.f->dim;
  x.gather(b.r0, r1, s.xr);
  y.gather(b.c0, c1, s.yr);
  detail::squared_distances(s.xr, x.norms.data() + b.r0, rows, s.yr, y.norms.data() + b.c0, cols, d, s.g);
  double sum = 0.0;
  for (std::size_t i = 0; i < rows; ++i) {
    const double* gi = s.g.data() + i * cols;
    double row = 0.0;
    for (std::size_t j = 0; j < cols; ++j) row += std::expm1(-gamma * (diagonal && i == j ? 0.0 : gi[j]));
    sum += row;
  }
  return sum;
}

/// OpenBLAS on one thread while the blocks are shared among ours (and back as it was after).
class OneBlasThread {
 public:
  OneBlasThread() : before_(openblas_get_num_threads()) { openblas_set_num_threads(1); }
  ~OneBlasThread() { openblas_set_num_threads(before_); }
  OneBlasThread(const OneBlasThread&) = delete;
  OneBlasThread& operator=(const OneBlasThread&) = delete;

 private:
  int before_;
};

/// Sum over every ordered pair (i, j) of rows of x and y of expm1(-gamma |x_i - y_j|^2) (x == y:
/// one side's pairs, the diagonal included).
double kernel_sum(const Side& x, const Side& y, bool same, const CmmdOptions& o, double gamma) {
  const std::size_t block = std::max<std::size_t>(1, o.block);
  std::vector<Block> blocks;
  for (std::size_t r0 = 0; r0 < x.size(); r0 += block)
    for (std::size_t c0 = same ? r0 : 0; c0 < y.size(); c0 += block)
      blocks.push_back({r0, c0, same && c0 != r0 ? 2.0 : 1.0});
  std::vector<double> sums(blocks.size(), 0.0);
  const std::size_t threads = std::min<std::size_t>(
      blocks.size(), static_cast<std::size_t>(o.threads > 0 ? o.threads : std::max(1, hardware_cores())));
  std::atomic<std::size_t> next{0};
  std::exception_ptr failed;
  std::mutex failed_mutex;
  auto work = [&] {
    Scratch s;
    try {
      for (std::size_t k; (k = next.fetch_add(1)) < blocks.size();)
        sums[k] = blocks[k].weight * block_sum(x, y, blocks[k], block, gamma, same && blocks[k].c0 == blocks[k].r0, s);
    } catch (...) {  // std::bad_alloc of a block's buffers: the first one is rethrown below
      std::lock_guard<std::mutex> lock(failed_mutex);
      if (!failed) failed = std::current_exception();
      next = blocks.size();
    }
  };
  {
    const OneBlasThread one;
    std::vector<std::thread> pool;
    pool.reserve(threads);
    try {
      for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    } catch (const std::system_error&) {  // no more threads: the ones started (and this one) do the blocks
    }
    work();
    for (auto& t : pool) t.join();
  }
  if (failed) std::rethrow_exception(failed);
  double total = 0.0, carry = 0.0;  // Neumaier's compensated sum, in block order
  for (double v : sums) {
    const double t = total + v;
    carry += std::fabs(total) >= std::fabs(v) ? (total - t) + v : (v - t) + total;
    total = t;
  }
  return total + carry;
}

/// The CmmdTermCache key of side `s`'s own term (cmmd.hpp says what it covers).
std::string term_key(const Side& s, const CmmdOptions& o) {
  Sha256 h;
  char head[128];
  std::snprintf(head, sizeof head, "vecbench cmmd own term 1\n%zu %d %a %zu\n", s.size(), s.f->dim, o.sigma,
                std::max<std::size_t>(1, o.block));
  h.update(std::string(head));
  // the arithmetic's own bits: OpenBLAS's kernel for this CPU (its dgemm) and the C library (expm1)
  h.update(std::string(openblas_get_config()) + " " + openblas_get_corename() + " glibc " + gnu_get_libc_version() +
           "\n");
  const std::size_t d = static_cast<std::size_t>(s.f->dim);
  for (const std::size_t r : s.rows) h.update(s.f->x.data() + r * d, d * sizeof(float));
  return h.hex();
}

std::string hex_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

/// The cache file's check: what a damaged value or key fails.
std::string term_check(const std::string& key, const std::string& value) {
  return sha256_hex(key + "\n" + value).substr(0, 16);
}

/// Side `s`'s own term, mean k(x, x') - 1: from `cache` when it holds it, else computed (and kept).
double own_term(const Side& s, const CmmdOptions& o, double gamma, const CmmdTermCache* cache, bool& from_cache) {
  const std::string key = cache ? term_key(s, o) : std::string();
  if (cache)
    if (const auto kept = cache->find(key)) {
      from_cache = true;
      return *kept;
    }
  const double n = static_cast<double>(s.size());
  const double term = kernel_sum(s, s, true, o, gamma) / (n * n);
  if (cache) cache->keep(key, term);
  return term;
}

}  // namespace

std::optional<double> CmmdTermCache::find(const std::string& key) const {
  std::error_code ec;
  const fs::path file = file_of(key);
  if (!fs::is_regular_file(file, ec) || fs::file_size(file, ec) > 4096) return std::nullopt;
  try {
    std::ifstream in(file);
    const nlohmann::json j = nlohmann::json::parse(in);
    const std::string value = j.at("mean_minus_1").get<std::string>();
    if (j.at("format") != "vecbench-cmmd-own-term-1" || j.at("key") != key || j.at("check") != term_check(key, value))
      return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {  // not JSON, a field missing or of another type
    return std::nullopt;
  }
}

bool CmmdTermCache::keep(const std::string& key, double term) const {
  const std::string value = hex_double(term);
  const nlohmann::json j = {
      {"format", "vecbench-cmmd-own-term-1"}, {"key", key}, {"mean_minus_1", value}, {"check", term_check(key, value)}};
  try {
    fs::create_directories(dir_);
    atomic_write(file_of(key), j.dump(1) + "\n");
    return true;
  } catch (const std::exception&) {  // a read-only or full cache folder: the term is only not kept
    return false;
  }
}

std::pair<double, double> row_norm_range(const FeatureSet& f) {
  if (f.n == 0) return {0.0, 0.0};
  double lo = std::numeric_limits<double>::infinity(), hi = 0.0;
  for (const double s : detail::squared_norms(f)) {
    lo = std::min(lo, std::sqrt(s));
    hi = std::max(hi, std::sqrt(s));
  }
  return {lo, hi};
}

CmmdResult cmmd(const FeatureSet& a, const FeatureSet& b, const CmmdOptions& o, const CmmdTermCache* cache) {
  if (a.dim != b.dim)
    throw ConfigError("--cmmd", a.origin + " has embeddings of " + std::to_string(a.dim) + " values, " + b.origin +
                                    " of " + std::to_string(b.dim));
  if (!(o.sigma > 0.0) || !std::isfinite(o.sigma) || !(o.scale > 0.0) || !std::isfinite(o.scale))
    throw ConfigError("--cmmd", "sigma and scale must be positive numbers");
  const Side x(a, o.batch), y(b, o.batch);
  for (const Side* s : {&x, &y})
    if (s->size() == 0)
      throw ConfigError("--cmmd", s->f->origin + " holds " + std::to_string(s->f->n) + " embeddings" +
                                      (o.batch ? ", no full batch of " + std::to_string(o.batch) : std::string()));
  const double gamma = 1.0 / (2.0 * o.sigma * o.sigma);
  const double na = static_cast<double>(x.size()), nb = static_cast<double>(y.size());
  CmmdResult r;
  r.sigma = o.sigma;
  r.scale = o.scale;
  r.batch = o.batch;
  r.n_a = a.n;
  r.n_b = b.n;
  r.used_a = x.size();
  r.used_b = y.size();
  r.mean_aa_minus_1 = own_term(x, o, gamma, cache, r.aa_from_cache);
  r.mean_bb_minus_1 = own_term(y, o, gamma, cache, r.bb_from_cache);
  r.mean_ab_minus_1 = kernel_sum(x, y, false, o, gamma) / (na * nb);
  r.value = o.scale * (r.mean_aa_minus_1 + r.mean_bb_minus_1 - 2.0 * r.mean_ab_minus_1);
  return r;
}

}  // namespace vecbench
