// Winograd F(4x4, 3x3), F(2x2, 5x5), F(4, 7) and F(4, 3) on AVX2 + FMA and on AVX-512 (see
// include/vecbench/engine/winograd.hpp).
//
// The kernels are written once (winograd_kernels.inl) and compiled twice here, in the namespaces
// avx2 and avx512, each inside a `#pragma GCC target` region and an anonymous namespace: only
// those functions use AVX2 or AVX-512 instructions (built on x86 only), they run only where
// available(block) says the CPU has them, and the rest of this file (and every template it
// instantiates, std::fill included: defined outside the regions) is compiled for the baseline
// ISA, so no vector code can leak into other translation units through the linker.
#include "vecbench/engine/winograd.hpp"

#include "vecbench/core/base/aligned.hpp"
#include "vecbench/core/system/cpu_features.hpp"

#if defined(__x86_64__) || defined(__i386__)
#define VECBENCH_WINOGRAD_X86 1
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace vecbench::winograd {

namespace {

constexpr int kTile = 4;   // outputs per tile side (F(4x4, 3x3), F(4, 7), F(4, 3))
constexpr int kTile5 = 2;  // F(2x2, 5x5): outputs per tile side (inputs: kIn, as F(4x4, 3x3))
constexpr int kIn = 6;     // F(4x4, 3x3): inputs per tile side (kTile + 3 - 1)
constexpr int kPos = 36;   // F(4x4, 3x3): kIn * kIn transformed positions

/// The long axis of a one-dimensional kernel runs down the columns (7x1, 3x1) or along the rows.
bool along_y(Kernel k) { return k == Kernel::k7x1 || k == Kernel::k3x1; }

bool two_d(Kernel k) { return k == Kernel::k3x3 || k == Kernel::k5x5; }
int tile_side(Kernel k) { return k == Kernel::k5x5 ? kTile5 : kTile; }
int tile_h(const ConvShape& s) { return two_d(s.kernel) || along_y(s.kernel) ? tile_side(s.kernel) : 1; }
int tile_w(const ConvShape& s) { return two_d(s.kernel) || !along_y(s.kernel) ? tile_side(s.kernel) : 1; }
int positions(const ConvShape& s) { return winograd::positions(s.kernel); }
int tiles_y(const ConvShape& s) { return (s.out_h() + tile_h(s) - 1) / tile_h(s); }
int tiles_x(const ConvShape& s) { return (s.out_w() + tile_w(s) - 1) / tile_w(s); }
int tile_count(const ConvShape& s) { return s.batch * tiles_y(s) * tiles_x(s); }

/// Tiles per micro-kernel call for a channel block of `block` floats: 6 with AVX2's 16 registers
/// (12 accumulators), 8 with AVX-512's 32 (16 accumulators).
constexpr int micro_rows(int block) { return block == 16 ? 8 : 6; }
/// The most tiles in a block (block_tiles' cap).
constexpr int kMaxBlockTiles = 16 * micro_rows(16);

/// Where tile `t` of `s` starts: image, first output row and column. Tiles run along the rows
/// (x innermost), so that consecutive tiles read neighbouring pixels.
struct TileAt {
  int n, y, x;
};
TileAt tile_at(const ConvShape& s, int t) {
  const int per_image = tiles_y(s) * tiles_x(s);
  const int r = t % per_image;
  return {t / per_image, r / tiles_x(s) * tile_h(s), r % tiles_x(s) * tile_w(s)};
}

/// The matrices of F(M, R) by Toom-Cook (y = A^T [(G g) * (B^T d)], y_i = sum_k g_k d_(i+k)) for
/// kN - 1 points and infinity. A^T and B^T are exact in float for the points used here (dyadic
/// rationals); G keeps double precision for make_filter.
template <int M, int R>
struct Toom {
  static constexpr int kOut = M, kTaps = R, kN = M + R - 1;
  float at[M][kN];
  float bt[kN][kN];
  double g[kN][R];
};

/// Coefficients (lowest power first) of prod (x - r) over `roots`.
std::vector<double> poly_from_roots(const std::vector<double>& roots) {
  std::vector<double> c{1.0};
  for (const double a : roots) {
    std::vector<double> next(c.size() + 1, 0.0);
    for (std::size_t i = 0; i < c.size(); ++i) next[i + 1] += c[i], next[i] -= a * c[i];
    c = std::move(next);
  }
  return c;
}

template <int M, int R>
Toom<M, R> make_toom(const std::vector<double>& pts) {  // kN - 1 finite points; infinity is the last row
  using T = Toom<M, R>;
  T t{};
  for (std::size_t j = 0; j < pts.size(); ++j) {
    std::vector<double> others;
    double f = 1;
    for (std::size_t l = 0; l < pts.size(); ++l)
      if (l != j) others.push_back(pts[l]), f *= pts[j] - pts[l];
    double power = 1;
    for (int k = 0; k < R; ++k, power *= pts[j]) t.g[j][k] = power / f;
    power = 1;
    for (int i = 0; i < M; ++i, power *= pts[j]) t.at[i][j] = static_cast<float>(power);
    const std::vector<double> n = poly_from_roots(others);  // B^T row j: prod of (x - a_l), l != j
    for (std::size_t k = 0; k < n.size(); ++k) t.bt[j][k] = static_cast<float>(n[k]);
  }
  t.g[T::kN - 1][R - 1] = 1;  // infinity: the leading coefficient
  t.at[M - 1][T::kN - 1] = 1;
  const std::vector<double> m = poly_from_roots(pts);
  for (std::size_t k = 0; k < m.size(); ++k) t.bt[T::kN - 1][k] = static_cast<float>(m[k]);
  return t;
}

/// F(4, 7) with the points 0, +-1, +-2, +-1/2, +-3/4 and infinity: among small rationals the set
/// whose float rounding was smallest (3e-6 of the largest output on 96 channels of random
/// post-ReLU inputs, against 6e-6 for 0, +-1, +-2, +-1/2, 4, -1/4 and 1.6e-5 for 0, +-1, +-2,
/// +-1/2, +-3; the 1-D F(4, 3) gives 2e-6).
const Toom<4, 7>& toom7() {
  static const Toom<4, 7> t = make_toom<4, 7>({0, 1, -1, 2, -2, 0.5, -0.5, 0.75, -0.75});
  return t;
}

/// F(4, 3) with the points 0, +-1, +-2 and infinity: the 1x3 and 3x1 layers, and (its G, its B^T
/// and A^T as written out in the kernels' input_1d and output_1d) the 3x3 layers.
const Toom<4, 3>& toom3() {
  static const Toom<4, 3> t = make_toom<4, 3>({0, 1, -1, 2, -2});
  return t;
}

/// F(2, 5) with the same points: its B^T is F(4, 3)'s (the input transform of the 3x3 kernels),
/// applied as F(2x2, 5x5) to the 5x5 layers (36 products per 4 outputs instead of 100).
const Toom<2, 5>& toom25() {
  static const Toom<2, 5> t = make_toom<2, 5>({0, 1, -1, 2, -2});
  return t;
}

}  // namespace

int block_tiles(const ConvShape& s) {
  // A block's V (positions x tiles x in_c floats) in about 512 KiB of a core's L2 (1 MiB on AMD
  // Zen 4 and Zen 5, 1.25-2 MiB on Intel), beside the products of one panel of output channels and
  // the filters streaming through; the filters are read once per block, so larger blocks read
  // them less often. Where all the tiles' V fits in 1 MiB they make one block: on small maps with
  // many channels (Mixed_7b/c's 448 -> 384 on 8x8: 16 tiles at batch 4, 25 MB of filters) reading
  // the filters once matters more than V staying in L2 (1.57x on that layer).
  const int unit = micro_rows(s.block);
  const std::size_t per_tile = static_cast<std::size_t>(positions(s)) * s.in_c * sizeof(float);
  static_assert(16 * micro_rows(8) <= kMaxBlockTiles && 16 * micro_rows(16) <= kMaxBlockTiles);
  const int all = (tile_count(s) + unit - 1) / unit * unit;
  if (static_cast<std::size_t>(all) * per_tile <= (1024u << 10) && all <= 16 * unit) return all;
  int rows = static_cast<int>((512u << 10) / per_tile) / unit * unit;
  rows = std::clamp(rows, unit, 16 * unit);
  return std::min(rows, all);
}

namespace {

#ifdef VECBENCH_WINOGRAD_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
using Vec = __m256;
constexpr int kLanes = 8, kRows = micro_rows(kLanes);
inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec vzero() { return _mm256_setzero_ps(); }
inline Vec vset1(float x) { return _mm256_set1_ps(x); }
inline Vec vbcast(const float* p) { return _mm256_broadcast_ss(p); }
inline Vec vadd(Vec a, Vec b) { return _mm256_add_ps(a, b); }
inline Vec vsub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
inline Vec vfmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec vfnmadd(Vec a, Vec b, Vec c) { return _mm256_fnmadd_ps(a, b, c); }
inline Vec vmax(Vec a, Vec b) { return _mm256_max_ps(a, b); }
#include "winograd_kernels.inl"
}  // namespace avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f")
// GCC 12 warns on the _mm512_undefined_ps() inside its own _mm512_max_ps (a false positive)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace avx512 {
using Vec = __m512;
constexpr int kLanes = 16, kRows = micro_rows(kLanes);
inline Vec vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline Vec vzero() { return _mm512_setzero_ps(); }
inline Vec vset1(float x) { return _mm512_set1_ps(x); }
inline Vec vbcast(const float* p) { return _mm512_set1_ps(*p); }
inline Vec vadd(Vec a, Vec b) { return _mm512_add_ps(a, b); }
inline Vec vsub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
inline Vec vfmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec vfnmadd(Vec a, Vec b, Vec c) { return _mm512_fnmadd_ps(a, b, c); }
inline Vec vmax(Vec a, Vec b) { return _mm512_max_ps(a, b); }
#include "winograd_kernels.inl"
}  // namespace avx512
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif  // VECBENCH_WINOGRAD_X86

}  // namespace

bool available(int block) {
#ifdef VECBENCH_WINOGRAD_X86
  return block == 8 ? cpu_features().avx2_fma : block == 16 && cpu_features().avx512f;
#else
  (void)block;
  return false;
#endif
}

bool supports(const ConvShape& s) {
  return (s.block == 8 || s.block == 16) && s.batch >= 1 && s.in_c > 0 && s.in_c % s.block == 0 && s.out_c > 0 &&
         s.out_c % (2 * s.block) == 0 && s.pad >= 0 && s.out_h() >= 1 && s.out_w() >= 1;
}

int positions(Kernel k) { return two_d(k) ? kPos : k == Kernel::k1x3 || k == Kernel::k3x1 ? 6 : 10; }

std::size_t Filter::bytes() const {
  return (static_cast<std::size_t>(positions) * in_c * out_c + static_cast<std::size_t>(out_c)) * sizeof(float);
}

namespace {

// The filter transforms of one input channel for a panel of output channels (innermost, `n` of
// them): g[k][o] (the taps) -> u[p][o] (the positions), in double precision, each loop over o
// contiguous so that the compiler vectorizes it.
constexpr std::size_t kMaxPanel = 32;
using PanelTaps = double[25][kMaxPanel];
using PanelPositions = double[kPos][kMaxPanel];

/// F(4x4, 3x3) and F(2x2, 5x5): U = G g G^T, G (6 x R) of toom3() or toom25(), g the R x R taps.
/// Each sum starts with its first product (the order the 3x3 transform always had).
template <int R>
void transform_square(const double (&G)[kIn][R], const PanelTaps& g, PanelPositions& u, std::size_t n) {
  double gg[kIn][R][kMaxPanel];  // G g
  for (int i = 0; i < kIn; ++i)
    for (int k = 0; k < R; ++k)
      for (std::size_t o = 0; o < n; ++o) {
        double sum = G[i][0] * g[k][o];
        for (int a = 1; a < R; ++a) sum += G[i][a] * g[a * R + k][o];
        gg[i][k][o] = sum;
      }
  for (int i = 0; i < kIn; ++i)
    for (int j = 0; j < kIn; ++j)
      for (std::size_t o = 0; o < n; ++o) {
        double sum = gg[i][0][o] * G[j][0];
        for (int b = 1; b < R; ++b) sum += gg[i][b][o] * G[j][b];
        u[i * kIn + j][o] = sum;
      }
}

/// F(4, R) along one axis: U = G g, G (npos x taps) row-major.
void transform_line(const double* G, std::size_t taps, std::size_t npos, const PanelTaps& g, PanelPositions& u,
                    std::size_t n) {
  for (std::size_t p = 0; p < npos; ++p) {
    for (std::size_t o = 0; o < n; ++o) u[p][o] = 0;
    for (std::size_t k = 0; k < taps; ++k) {
      const double coef = G[p * taps + k];
      for (std::size_t o = 0; o < n; ++o) u[p][o] += coef * g[k][o];
    }
  }
}

/// A filter's shape, its floats not yet there (make_filter, filter_view).
std::shared_ptr<Filter> new_filter(int out_c, int in_c, int block, Kernel kernel) {
  auto f = std::make_shared<Filter>();
  f->in_c = in_c;
  f->out_c = out_c;
  f->block = block;
  f->kernel = kernel;
  f->positions = winograd::positions(kernel);
  return f;
}

}  // namespace

std::shared_ptr<const Filter> make_filter(const float* oihw, const float* bias, int out_c, int in_c, int block,
                                          Kernel kernel) {
  if (block != 8 && block != 16) throw std::invalid_argument("winograd::make_filter: block must be 8 or 16");
  auto f = new_filter(out_c, in_c, block, kernel);
  // one buffer: u, then the bias (u_floats() is a multiple of 16: still at a 64-byte boundary)
  std::shared_ptr<float> buf(aligned_floats(f->u_floats() + static_cast<std::size_t>(out_c)).release(), std::free);
  float* const u_out = buf.get();
  f->u = u_out;
  f->bias = u_out + f->u_floats();
  std::copy(bias, bias + out_c, u_out + f->u_floats());
  f->storage = std::move(buf);
  const std::size_t ic = static_cast<std::size_t>(in_c), oc = static_cast<std::size_t>(out_c);
  const std::size_t panel = 2 * static_cast<std::size_t>(block), npos = static_cast<std::size_t>(f->positions);
  ConvShape one;
  one.kernel = kernel;
  const std::size_t taps = static_cast<std::size_t>(one.kh() * one.kw());
  // One panel of output channels at a time, those channels innermost: the arithmetic runs over
  // contiguous arrays and each position's floats are written in order (part of every start-up:
  // about 10x faster than channel pair by channel pair, results/kernels/winograd-f47-*.md).
  PanelTaps g;
  PanelPositions u;
  for (std::size_t j = 0; j < oc / panel; ++j)
    for (std::size_t c = 0; c < ic; ++c) {
      for (std::size_t o = 0; o < panel; ++o)  // 1xN and Nx1 both keep their N taps in a row
        for (std::size_t k = 0; k < taps; ++k) g[k][o] = oihw[((j * panel + o) * ic + c) * taps + k];
      if (kernel == Kernel::k3x3)
        transform_square(toom3().g, g, u, panel);
      else if (kernel == Kernel::k5x5)
        transform_square(toom25().g, g, u, panel);
      else
        transform_line(taps == 7 ? &toom7().g[0][0] : &toom3().g[0][0], taps, npos, g, u, panel);
      for (std::size_t p = 0; p < npos; ++p) {
        float* at = u_out + p * ic * oc + j * ic * panel + c * panel;
        for (std::size_t o = 0; o < panel; ++o) at[o] = static_cast<float>(u[p][o]);
      }
    }
  return f;
}

std::shared_ptr<const Filter> filter_view(int out_c, int in_c, int block, Kernel kernel, const float* u,
                                          const float* bias, std::shared_ptr<const void> storage) {
  const auto aligned = [](const float* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; };
  if ((block != 8 && block != 16) || in_c <= 0 || out_c <= 0 || in_c % block != 0 || out_c % (2 * block) != 0)
    throw std::invalid_argument("winograd::filter_view: channels " + std::to_string(in_c) + " -> " +
                                std::to_string(out_c) + " do not fit " + std::to_string(block) + "-channel blocks");
  if (!u || !bias || !aligned(u) || !aligned(bias))
    throw std::invalid_argument("winograd::filter_view: the filters are not at 64-byte boundaries");
  auto f = new_filter(out_c, in_c, block, kernel);
  f->u = u;
  f->bias = bias;
  f->storage = std::move(storage);
  return f;
}

int block_count(const ConvShape& s) { return (tile_count(s) + block_tiles(s) - 1) / block_tiles(s); }

std::size_t scratch_floats(const ConvShape& s) {
  return static_cast<std::size_t>(positions(s)) * block_tiles(s) * (s.in_c + 2 * static_cast<std::size_t>(s.block));
}

int channel_groups(const ConvShape& s, int threads) {
  const int blocks = block_count(s), panels = s.out_c / (2 * s.block);
  return std::clamp((std::max(threads, 1) + blocks - 1) / blocks, 1, panels);
}

void run_units(const Filter& f, const ConvShape& s, const BlockedTensor& src, const BlockedTensor& dst, int groups,
               int first, int last, float* scratch) {
  if (first >= last) return;
  if (f.block != s.block || f.in_c != s.in_c || f.out_c != s.out_c || f.kernel != s.kernel)
    throw std::logic_error("winograd::run_units: the filter was made for another shape, kernel or channel block");
  if (!available(s.block))
    throw std::logic_error("winograd::run_units: this CPU has no kernels for " + std::to_string(s.block) +
                           "-channel blocks (available() is false)");
#ifdef VECBENCH_WINOGRAD_X86
  if (s.block == 16)
    avx512::run_units_isa(f, s, src, dst, groups, first, last, scratch);
  else
    avx2::run_units_isa(f, s, src, dst, groups, first, last, scratch);
#else
  (void)src, (void)dst, (void)groups, (void)scratch;
#endif
}

}  // namespace vecbench::winograd
