// FID and KID (include/vecbench/fid/fid.hpp). Linear algebra by OpenBLAS (CBLAS) and LAPACKE
// (Debian's libopenblas-dev, liblapacke-dev), never by hand.
#include "vecbench/fid/fid.hpp"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>

#include "vecbench/core/base/error.hpp"
#include "vecbench/core/files/checksum.hpp"
#include "vecbench/core/files/npy.hpp"
#include "vecbench/fid/npz.hpp"
#include "vecbench/fid/pickle.hpp"
#include "vecbench/output/fingerprint.hpp"
#include "vecbench/output/store_reader.hpp"
#include "vecbench_version.hpp"

namespace vecbench {
namespace {

/// Streaming float64 moments, shifted by the first vector (no cancellation from large means):
/// chunks of rows go into sum and the Gram matrix by dsyrk.
class Moments {
 public:
  void add(const float* x, int dim) {
    if (dim_ == 0) {
      dim_ = dim;
      shift_.assign(x, x + dim);
      sum_.assign(dim, 0.0);
      gram_.assign(static_cast<std::size_t>(dim) * dim, 0.0);
    }
    if (dim != dim_)
      throw Error("feature vectors of " + std::to_string(dim) + " and " + std::to_string(dim_) + " values");
    for (int i = 0; i < dim; ++i) {
      const double v = static_cast<double>(x[i]) - shift_[i];
      if (!std::isfinite(v)) throw Error("a feature vector holds NaN or Inf");
      chunk_.push_back(v);
      sum_[i] += v;
    }
    ++n_;
    if (chunk_.size() >= static_cast<std::size_t>(kRows) * dim_) flush();
  }
  FeatureStats finish() {
    flush();
    FeatureStats s;
    s.n = n_;
    s.dim = dim_;
    if (n_ == 0) return s;
    const std::size_t d = dim_;
    s.mu.resize(d);
    std::vector<double> m(d);
    for (std::size_t i = 0; i < d; ++i) m[i] = sum_[i] / static_cast<double>(n_), s.mu[i] = shift_[i] + m[i];
    s.sigma.assign(d * d, 0.0);
    const double den = n_ > 1 ? static_cast<double>(n_ - 1) : 1.0;
    for (std::size_t i = 0; i < d; ++i)
      for (std::size_t j = i; j < d; ++j)
        s.sigma[i * d + j] = s.sigma[j * d + i] = (gram_[i * d + j] - static_cast<double>(n_) * m[i] * m[j]) / den;
    return s;
  }

 private:
  static constexpr int kRows = 256;
  void flush() {
    if (chunk_.empty()) return;
    const int k = static_cast<int>(chunk_.size() / dim_);
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, dim_, k, 1.0, chunk_.data(), dim_, 1.0, gram_.data(), dim_);
    chunk_.clear();
  }
  int dim_ = 0;
  std::int64_t n_ = 0;
  std::vector<double> shift_, sum_, gram_, chunk_;
};

/// Symmetric eigendecomposition in place (row-major): eigenvalues ascending into `w`, and with
/// `vectors` the eigenvectors as the columns of `a`.
void eigh(std::vector<double>& a, int n, std::vector<double>& w, bool vectors) {
  w.resize(n);
  const lapack_int rc = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, vectors ? 'V' : 'N', 'U', n, a.data(), n, w.data());
  if (rc != 0) throw Error("LAPACKE_dsyevd failed (info " + std::to_string(rc) + ")");
}

std::string npz_string(const std::string& s) {  // a NumPy unicode scalar ('<U'), UTF-32LE
  const std::size_t len = std::max<std::size_t>(s.size(), 1);
  std::string data(4 * len, '\0');  // ASCII text (JSON escapes anything else); "" is one NUL
  for (std::size_t i = 0; i < s.size(); ++i) data[4 * i] = s[i];
  return npy::to_bytes("<U" + std::to_string(len), {}, data.data(), data.size());
}

std::string npz_text(const npy::Array& a) {
  std::string s;
  for (std::size_t i = 0; i + 3 < a.data.size(); i += 4)
    if (a.data[i]) s += static_cast<char>(a.data[i]);
  return s;
}

/// The member of a .npz that holds feature vectors: dgm-eval's `reps`, clean-fid's `feats` ("": none).
std::string features_member(const fs::path& path) {
  const std::vector<std::string> m = npz::members(path);
  const auto has = [&](const char* k) { return std::find(m.begin(), m.end(), k) != m.end(); };
  if (has("mu") && has("sigma")) return "";
  return has("reps") ? "reps" : has("feats") ? "feats" : "";
}

/// The rows of a .npz of features (float64 rows as float32: dgm-eval's came from float32).
void npz_feature_rows(const fs::path& path, const std::function<void(const float*, int)>& row) {
  const std::string name = path.string(), key = features_member(path);
  if (key.empty())
    throw IoError(name,
                  "a .npz of statistics, not of feature vectors (dgm-eval's `reps`, clean-fid's `feats`): "
                  "this needs the features themselves");
  const npy::Array a = npz::load(path, {key}).at(key);
  if (a.shape.size() != 2 || a.shape[1] == 0 || (a.descr != "<f4" && a.descr != "<f8"))
    throw IoError(name, "member " + key + " is not a float32 or float64 feature matrix [N, dim] (dtype " + a.descr +
                            ", " + std::to_string(a.shape.size()) + " dimensions)");
  const std::size_t n = a.shape[0], d = a.shape[1];
  if (a.data.size() != n * d * (a.descr == "<f4" ? 4 : 8))
    throw IoError(name, "member " + key + " holds " + std::to_string(a.data.size()) + " bytes, not the " +
                            std::to_string(n) + " x " + std::to_string(d) + " its header says");
  std::vector<float> x(d);
  for (std::size_t r = 0; r < n; ++r) {
    if (a.descr == "<f4") {
      std::memcpy(x.data(), a.data.data() + r * d * 4, d * 4);
    } else {
      for (std::size_t i = 0; i < d; ++i) {
        double v;
        std::memcpy(&v, a.data.data() + (r * d + i) * 8, 8);
        x[i] = static_cast<float>(v);
      }
    }
    row(x.data(), static_cast<int>(d));
  }
}

/// mu (d,) and sigma (d, d), finite, into `s` (`where` names the file in errors).
void set_mu_sigma(FeatureStats& s, const npy::Array& mu, const npy::Array& sigma, const std::string& where) {
  s.mu = npz::as_f64(mu, where + ": mu");
  s.sigma = npz::as_f64(sigma, where + ": sigma");
  s.dim = static_cast<int>(s.mu.size());
  const auto& sh = sigma.shape;
  if (mu.shape.size() != 1 || sh.size() != 2 || sh[0] != s.mu.size() || sh[1] != s.mu.size())
    throw IoError(where, "mu must be (d,) and sigma (d, d); got mu of " + std::to_string(mu.shape.size()) +
                             " dimensions and sigma of " + std::to_string(sh.size()));
  for (const auto* v : {&s.mu, &s.sigma})
    if (std::any_of(v->begin(), v->end(), [](double x) { return !std::isfinite(x); }))
      throw IoError(where, std::string(v == &s.mu ? "mu" : "sigma") + " holds NaN or Inf");
}

}  // namespace

void for_each_feature(const fs::path& path, const std::function<void(const float*, int)>& row, std::string& fp_id,
                      nlohmann::json& fields, WeightSource* weight_source, std::vector<std::string>* names) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const Fingerprint fp = read_store_fingerprint(path);
    fp_id = fp.empty() ? "" : fp.id();
    if (weight_source) *weight_source = fp.weight_source;
    fields = fp.empty() ? nlohmann::json(nullptr) : fp.fields;
    const int dim = fp.empty() ? 0 : fp.fields.value("feature_dim", 0);
    // Every vector against its manifest line's checksum as it streams past (no second pass): a
    // statistic of a store with a rotted vector is refused, not computed.
    std::size_t bad = 0;
    std::string first_bad;
    for_each_stored_vector(
        path, newest_ok_entries(path, fp_id), dim,
        [&](const StoreEntry& e, const float* v, int d, const std::string& why) {
          if (!v)
            throw IoError((path / e.file).string(), "the vector of " + e.input + " cannot be read (" + why +
                                                        "): check the folder with `vecbench verify`");
          if (!e.xxh3.empty() && vector_xxh3(v, d) != e.xxh3) {
            if (bad++ == 0)
              first_bad = e.file + (e.row >= 0 ? " row " + std::to_string(e.row) : "") + " (input " + e.input + ")";
            return;
          }
          row(v, d);
          if (names) names->push_back(e.input);
        });
    if (bad > 0)
      throw IoError(path.string(), std::to_string(bad) +
                                       " stored vectors do not match their checksums (the first: " + first_bad +
                                       "): statistics of rotted vectors are refused; run `vecbench verify --repair " +
                                       path.string() + "` and vectorize again to redo them");
    return;
  }
  if (path.extension() == ".npz") return npz_feature_rows(path, row);
  if (path.extension() != ".npy")
    throw IoError(path.string(), "not an output folder, a .npy feature matrix or a .npz stats file");
  std::ifstream in(path, std::ios::binary);  // in chunks of rows: memory independent of N
  if (!in) throw IoError(path.string(), "cannot open");
  const npy::Array a = npy::read_header(in, path.string());
  if (a.descr != "<f4" || a.shape.size() != 2 || a.shape[1] == 0)
    throw IoError(path.string(), "expected a float32 feature matrix [N, dim], got dtype " + a.descr + " of " +
                                     std::to_string(a.shape.size()) + " dimensions");
  const std::size_t n = a.shape[0], d = a.shape[1], chunk = 4096;
  std::vector<float> x(chunk * d);
  for (std::size_t i = 0; i < n; i += chunk) {
    const std::size_t k = std::min(chunk, n - i);
    if (!in.read(reinterpret_cast<char*>(x.data()), static_cast<std::streamsize>(k * d * sizeof(float))))
      throw IoError(path.string(), "cut short: " + std::to_string(n) + " rows announced, " + std::to_string(i) +
                                       " and part of the next read");
    for (std::size_t r = 0; r < k; ++r) row(x.data() + r * d, static_cast<int>(d));
  }
}

FeatureStats compute_stats(const fs::path& path) {
  Moments m;
  std::string fp_id;
  WeightSource weight_source;
  nlohmann::json fields;
  try {
    for_each_feature(
        path, [&](const float* x, int d) { m.add(x, d); }, fp_id, fields, &weight_source);
  } catch (const IoError&) {
    throw;
  } catch (const std::exception& e) {
    throw IoError(path.string(), e.what());
  }
  FeatureStats s = m.finish();
  if (s.n == 0) throw IoError(path.string(), "holds no feature vectors (an empty store, or none of its fingerprint)");
  s.fingerprint_id = fp_id;
  s.fingerprint = fields;
  s.weight_source = weight_source;
  s.origin = path.string();
  return s;
}

FeatureStats compute_stats(const FeatureSet& f) {
  Moments m;
  try {
    for (std::size_t i = 0; i < f.n; ++i) m.add(f.x.data() + i * static_cast<std::size_t>(f.dim), f.dim);
  } catch (const std::exception& e) {
    throw IoError(f.origin, e.what());
  }
  FeatureStats s = m.finish();
  if (s.n == 0) throw IoError(f.origin, "holds no feature vectors");
  s.fingerprint_id = f.fingerprint_id;
  s.fingerprint = f.fingerprint;
  s.weight_source = f.weight_source;
  s.origin = f.origin;
  return s;
}

FeatureSet load_features(const fs::path& path) {
  FeatureSet f;
  for_each_feature(
      path,
      [&](const float* x, int d) {
        if (f.dim == 0) f.dim = d;
        if (d != f.dim) throw IoError(path.string(), "feature vectors of different lengths");
        f.x.insert(f.x.end(), x, x + d);
        ++f.n;
      },
      f.fingerprint_id, f.fingerprint, &f.weight_source, &f.names);
  if (f.n == 0) throw IoError(path.string(), "holds no feature vectors");
  // refused as compute_stats refuses it (fid): every figure of such a set would be meaningless
  const auto bad = std::find_if(f.x.begin(), f.x.end(), [](float v) { return !std::isfinite(v); });
  if (bad != f.x.end()) {
    const std::size_t row = static_cast<std::size_t>(bad - f.x.begin()) / static_cast<std::size_t>(f.dim);
    throw IoError(path.string(), "a feature vector holds NaN or Inf (row " + std::to_string(row) +
                                     (row < f.names.size() ? ", input " + f.names[row] : std::string()) + ")");
  }
  f.origin = path.string();
  return f;
}

void save_stats(const fs::path& path, const FeatureStats& s) {
  const std::size_t d = s.dim;
  npz::save(path, {{"mu", npy::to_bytes("<f8", {d}, s.mu.data(), d * 8)},
                   {"sigma", npy::to_bytes("<f8", {d, d}, s.sigma.data(), d * d * 8)},
                   {"n", npy::to_bytes("<i8", {}, &s.n, 8)},
                   {"fingerprint_id", npz_string(s.fingerprint_id)},
                   {"fingerprint", npz_string(s.fingerprint.is_null() ? "" : s.fingerprint.dump())},
                   {"weight_source", npz_string(s.weight_source.text())},
                   {"vecbench_version", npz_string(VECBENCH_VERSION)}});
}

FeatureStats load_stats(const fs::path& path) {
  const std::string name = path.string();
  // only the members a stats file has: an ADM reference batch's arr_0 (its images) is never read
  const auto m = npz::load(path, {"mu", "sigma", "n", "fingerprint_id", "weight_source", "fingerprint"});
  if (!m.count("mu") || !m.count("sigma")) {
    std::string held;
    for (const std::string& k : npz::members(path)) held += (held.empty() ? "" : ", ") + k;
    throw IoError(name, "has no 'mu' and 'sigma' arrays (a stats file needs both; it holds: " + held + ")");
  }
  FeatureStats s;
  s.origin = name;
  set_mu_sigma(s, m.at("mu"), m.at("sigma"), name);
  if (m.count("n") && m.at("n").descr == "<i8") std::memcpy(&s.n, m.at("n").data.data(), 8);
  if (m.count("fingerprint_id")) s.fingerprint_id = npz_text(m.at("fingerprint_id"));
  if (m.count("weight_source")) s.weight_source = WeightSource::parse(npz_text(m.at("weight_source")));
  if (m.count("fingerprint")) {
    const auto j = nlohmann::json::parse(npz_text(m.at("fingerprint")), nullptr, false);
    if (!j.is_discarded()) s.fingerprint = j;
  }
  return s;
}

FeatureStats stats_of(const fs::path& path, const std::string& encoder) {
  if (path.extension() == ".pkl") return load_edm2_stats(path, encoder);
  return path.extension() == ".npz" && !npz_holds_features(path) ? load_stats(path) : compute_stats(path);
}

bool npz_holds_features(const fs::path& path) { return path.extension() == ".npz" && !features_member(path).empty(); }

std::string edm2_key(const std::string& encoder) {
  if (encoder.empty() || encoder == "inception-v3") return "fid";
  if (encoder == "dinov2-vit-l-14") return "fd_dinov2";
  throw ConfigError("--encoder",
                    "EDM2's reference .pkl holds statistics of inception-v3 ('fid') and "
                    "dinov2-vit-l-14 ('fd_dinov2') only, not of " +
                        encoder);
}

FeatureStats load_edm2_stats(const fs::path& path, const std::string& encoder) {
  const std::string name = path.string(), key = edm2_key(encoder);
  const pickle::Value v = pickle::read(path);
  std::string held;
  for (const auto& [k, x] : v.dict) held += (held.empty() ? "" : ", ") + k;
  const pickle::Value* st = v.find(key);
  if (!st)
    throw IoError(name, v.kind == pickle::Value::Kind::dict
                            ? "has no '" + key + "' statistics (" + (encoder.empty() ? "inception-v3" : encoder) +
                                  "'s, in EDM2's keys); it holds: " + held
                            : "not an EDM2 reference (a pickle of a dict of statistics)");
  const pickle::Value *mu = st->find("mu"), *sigma = st->find("sigma");
  if (!mu || !sigma || mu->kind != pickle::Value::Kind::array || sigma->kind != pickle::Value::Kind::array)
    throw IoError(name, "'" + key + "' has no 'mu' and 'sigma' arrays");
  FeatureStats s;
  s.origin = name;
  set_mu_sigma(s, mu->array, sigma->array, name + ": " + key);
  if (const pickle::Value* n = v.find("num_images"); n && n->kind == pickle::Value::Kind::integer) s.n = n->integer;
  return s;
}

void save_edm2_stats(const fs::path& path, const FeatureStats& s, const std::string& encoder) {
  const std::string name = path.string(), key = edm2_key(encoder);
  pickle::Value root;
  root.kind = pickle::Value::Kind::dict;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    root = pickle::read(path);
    if (root.kind != pickle::Value::Kind::dict || (!root.find("fid") && !root.find("fd_dinov2")))
      throw IoError(name, "exists and is not an EDM2 reference (a dict with 'fid' or 'fd_dinov2'): not overwritten");
    const pickle::Value* n = root.find("num_images");
    if (n && n->kind == pickle::Value::Kind::integer && n->integer != s.n)
      throw ConfigError(name, "holds statistics of " + std::to_string(n->integer) + " images, these are of " +
                                  std::to_string(s.n) +
                                  ": one reference file's statistics are of one image set "
                                  "(write them to another file)");
  }
  const std::size_t d = s.dim;
  npy::Array mu{"<f8", {d}, {}}, sigma{"<f8", {d, d}, {}};
  mu.data.resize(d * 8);
  sigma.data.resize(d * d * 8);
  std::memcpy(mu.data.data(), s.mu.data(), d * 8);
  std::memcpy(sigma.data.data(), s.sigma.data(), d * d * 8);
  pickle::Value st;
  st.set("mu", pickle::Value::of_array(std::move(mu)));
  st.set("sigma", pickle::Value::of_array(std::move(sigma)));
  root.set("num_images", pickle::Value::of_int(s.n));
  root.set(key, std::move(st));
  pickle::save(path, root);
}

FidResult frechet_distance(const FeatureStats& a, const FeatureStats& b) {
  if (a.dim != b.dim || a.dim == 0)
    throw Error("statistics of " + std::to_string(a.dim) + " and " + std::to_string(b.dim) + " features (" + a.origin +
                ", " + b.origin + ")");
  const int n = a.dim;
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  FidResult r;
  for (int i = 0; i < n; ++i) r.mean_term += (a.mu[i] - b.mu[i]) * (a.mu[i] - b.mu[i]);
  double tr = 0.0;
  for (int i = 0; i < n; ++i)
    tr += a.sigma[static_cast<std::size_t>(i) * n + i] + b.sigma[static_cast<std::size_t>(i) * n + i];
  std::vector<double> v = a.sigma, w;
  eigh(v, n, w, true);  // S1 = V diag(w) V^T
  std::vector<double> vs(nn), s1h(nn), t(nn), prod(nn);
  for (int j = 0; j < n; ++j) {
    if (w[j] < 0) r.clamped_s1 = std::min(r.clamped_s1, w[j]);
    const double sq = std::sqrt(std::max(w[j], 0.0));
    for (int i = 0; i < n; ++i) vs[static_cast<std::size_t>(i) * n + j] = v[static_cast<std::size_t>(i) * n + j] * sq;
  }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0, vs.data(), n, v.data(), n, 0.0, s1h.data(), n);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, s1h.data(), n, b.sigma.data(), n, 0.0, t.data(),
              n);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, t.data(), n, s1h.data(), n, 0.0, prod.data(), n);
  for (int i = 0; i < n; ++i)  // symmetric in exact arithmetic: make it so before dsyevd
    for (int j = i + 1; j < n; ++j) {
      const std::size_t ij = static_cast<std::size_t>(i) * n + j, ji = static_cast<std::size_t>(j) * n + i;
      prod[ij] = prod[ji] = 0.5 * (prod[ij] + prod[ji]);
    }
  eigh(prod, n, w, false);
  for (double l : w) {
    if (l < 0) r.clamped_product = std::min(r.clamped_product, l);
    r.trace_sqrt += std::sqrt(std::max(l, 0.0));
  }
  r.fid = r.mean_term + tr - 2.0 * r.trace_sqrt;
  return r;
}

KidResult kernel_distance(const FeatureSet& a, const FeatureSet& b, int subsets, std::size_t subset_size,
                          std::uint64_t seed) {
  if (a.dim != b.dim) throw Error("features of " + std::to_string(a.dim) + " and " + std::to_string(b.dim) + " values");
  const std::size_t m = std::min({a.n, b.n, subset_size});
  if (m < 2) throw Error("KID needs at least 2 vectors on each side");
  const int d = a.dim;
  std::mt19937_64 rng(seed);
  auto pick = [&](const FeatureSet& f, std::vector<double>& out) {  // m rows without replacement
    std::vector<std::size_t> idx(f.n);
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    for (std::size_t i = 0; i < m && m < f.n; ++i) std::swap(idx[i], idx[i + rng() % (f.n - i)]);
    out.resize(m * d);
    for (std::size_t i = 0; i < m; ++i)
      for (int k = 0; k < d; ++k) out[i * d + k] = f.x[idx[i] * d + k];
  };
  auto kernel_sum = [&](const std::vector<double>& x, const std::vector<double>& y, bool skip_diagonal) {
    std::vector<double> g(m * m);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(m), d, 1.0 / d, x.data(),
                d, y.data(), d, 0.0, g.data(), static_cast<int>(m));
    double s = 0.0;
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < m; ++j)
        if (!skip_diagonal || i != j) s += std::pow(g[i * m + j] + 1.0, 3);
    return s;
  };
  std::vector<double> values, x, y;
  for (int s = 0; s < subsets; ++s) {
    pick(b, x);
    pick(a, y);
    const double md = static_cast<double>(m);
    const double t = (kernel_sum(x, x, true) + kernel_sum(y, y, true)) / (md - 1) - 2 * kernel_sum(x, y, false) / md;
    values.push_back(t / md);
  }
  KidResult r;
  r.subsets = subsets;
  r.subset_size = m;
  r.mean = std::accumulate(values.begin(), values.end(), 0.0) / values.size();
  for (double v : values) r.std += (v - r.mean) * (v - r.mean);
  r.std = std::sqrt(r.std / values.size());
  return r;
}

}  // namespace vecbench
