// Winograd F(4x4, 3x3) on AVX2 + FMA (see include/vecbench/engine/winograd.hpp).
//
// Only the functions marked VB_AVX2 use AVX2 instructions (built on x86 only), and they run only
// where available() says the CPU has them; the rest of this file (and every template it instantiates) is compiled
// for the baseline ISA, so no AVX2 code can leak into other translation units through the linker.
#include "vecbench/engine/winograd.hpp"

#include "vecbench/core/aligned.hpp"

#if defined(__x86_64__) || defined(__i386__)
#define VECBENCH_WINOGRAD_X86 1
#include <immintrin.h>
#endif

#include <algorithm>
#include <stdexcept>

namespace vecbench::winograd {

namespace {

constexpr int kTile = 4;    // outputs per tile side
constexpr int kIn = 6;      // inputs per tile side (kTile + 3 - 1)
constexpr int kPos = 36;    // kIn * kIn transformed positions
constexpr int kRows = 6;    // rows of the matrix-product micro-kernel (tiles)
constexpr int kPanel = 16;  // its columns (output channels): two AVX2 registers

int tiles_y(const ConvShape& s) { return (s.out_h() + kTile - 1) / kTile; }
int tiles_x(const ConvShape& s) { return (s.out_w() + kTile - 1) / kTile; }
int tile_count(const ConvShape& s) { return s.batch * tiles_y(s) * tiles_x(s); }

#ifdef VECBENCH_WINOGRAD_X86
#define VB_AVX2 __attribute__((target("avx2,fma")))
#define VB_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) inline

/// B^T applied to 6 values (one column or row of an input tile).
VB_AVX2_INLINE void input_1d(const __m256 d[6], __m256 r[6]) {
  const __m256 four = _mm256_set1_ps(4.0f), five = _mm256_set1_ps(5.0f), two = _mm256_set1_ps(2.0f);
  // r0 = 4 d0 - 5 d2 + d4;      r5 = 4 d1 - 5 d3 + d5
  r[0] = _mm256_fnmadd_ps(five, d[2], _mm256_fmadd_ps(four, d[0], d[4]));
  r[5] = _mm256_fnmadd_ps(five, d[3], _mm256_fmadd_ps(four, d[1], d[5]));
  // r1 = -4 (d1 + d2) + (d3 + d4);  r2 = 4 (d1 - d2) + (d4 - d3)
  const __m256 s12 = _mm256_add_ps(d[1], d[2]), s34 = _mm256_add_ps(d[3], d[4]);
  r[1] = _mm256_fnmadd_ps(four, s12, s34);
  r[2] = _mm256_fmadd_ps(four, _mm256_sub_ps(d[1], d[2]), _mm256_sub_ps(d[4], d[3]));
  // r3 = 2 (d3 - d1) + (d4 - d2);  r4 = 2 (d1 - d3) + (d4 - d2)
  const __m256 d31 = _mm256_sub_ps(d[3], d[1]), d42 = _mm256_sub_ps(d[4], d[2]);
  r[3] = _mm256_fmadd_ps(two, d31, d42);
  r[4] = _mm256_fnmadd_ps(two, d31, d42);
}

/// A^T applied to 6 values: 4 outputs.
VB_AVX2_INLINE void output_1d(const __m256 m[6], __m256 o[4]) {
  const __m256 s12 = _mm256_add_ps(m[1], m[2]), d12 = _mm256_sub_ps(m[1], m[2]);
  const __m256 s34 = _mm256_add_ps(m[3], m[4]), d34 = _mm256_sub_ps(m[3], m[4]);
  o[0] = _mm256_add_ps(_mm256_add_ps(m[0], s12), s34);
  o[1] = _mm256_fmadd_ps(_mm256_set1_ps(2.0f), d34, d12);
  o[2] = _mm256_fmadd_ps(_mm256_set1_ps(4.0f), s34, s12);
  o[3] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.0f), d34, d12), m[5]);
}

/// Where tile `t` of `s` starts: image, first output row and column.
struct TileAt {
  int n, y, x;
};
TileAt tile_at(const ConvShape& s, int t) {
  const int per_image = tiles_y(s) * tiles_x(s);
  const int r = t % per_image;
  return {t / per_image, r / tiles_x(s) * kTile, r % tiles_x(s) * kTile};
}

// A block's transformed inputs V are kept tile by tile: tile t's 36 positions of in_c channels at
// [t][p][c], so that each tile's transform writes one contiguous stretch of memory.

/// The input tiles of block tiles [t0, t0 + count) into V (rows x kPos x in_c), rows >= count zeroed.
VB_AVX2 void transform_inputs(const ConvShape& s, const BlockedTensor& src, int t0, int count, int rows, float* v) {
  const std::size_t pos_stride = static_cast<std::size_t>(s.in_c), ldv = kPos * pos_stride;
  // channel blocks outermost: consecutive tiles then read neighbouring pixels (4 apart), which
  // the hardware prefetchers follow; a channel block's plane is a whole map away
  for (int cb = 0; cb < s.in_c / 8; ++cb)
    for (int tl = 0; tl < count; ++tl) {
      const TileAt at = tile_at(s, t0 + tl);
      const int y0 = at.y - s.pad, x0 = at.x - s.pad;
      const bool inside = y0 >= 0 && x0 >= 0 && y0 + kIn <= s.in_h && x0 + kIn <= s.in_w;
      const float* base = src.data + src.offset + at.n * src.stride_n + cb * src.stride_cb;
      __m256 d[kIn][kIn];
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < kIn; ++j) {
          const int y = y0 + i, x = x0 + j;
          d[i][j] = inside || (y >= 0 && y < s.in_h && x >= 0 && x < s.in_w)
                        ? _mm256_loadu_ps(base + y * src.stride_y + x * src.stride_x)
                        : _mm256_setzero_ps();
        }
      __m256 col[kIn], t[kIn][kIn];
      for (int j = 0; j < kIn; ++j) {  // B^T d: down each column
        __m256 in[kIn];
        for (int i = 0; i < kIn; ++i) in[i] = d[i][j];
        input_1d(in, col);
        for (int i = 0; i < kIn; ++i) t[i][j] = col[i];
      }
      float* out = v + static_cast<std::size_t>(tl) * ldv + static_cast<std::size_t>(cb) * 8;
      for (int i = 0; i < kIn; ++i) {  // (B^T d) B: along each row
        __m256 r[kIn];
        input_1d(t[i], r);
        for (int j = 0; j < kIn; ++j) _mm256_storeu_ps(out + static_cast<std::size_t>(i * kIn + j) * pos_stride, r[j]);
      }
    }
  std::fill(v + static_cast<std::size_t>(count) * ldv, v + static_cast<std::size_t>(rows) * ldv, 0.0f);
}

/// C (6 x 16, row stride ldc) = A (6 x k, row stride lda) * B (k x 16, dense panel).
VB_AVX2 void kernel_6x16(const float* a, std::size_t lda, const float* b, int k, float* c, std::size_t ldc) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(), c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps(), c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  const float *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda, *a4 = a + 4 * lda, *a5 = a + 5 * lda;
  for (int i = 0; i < k; ++i, b += kPanel) {
    const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
    __m256 x = _mm256_broadcast_ss(a0 + i);
    c00 = _mm256_fmadd_ps(x, b0, c00), c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a1 + i);
    c10 = _mm256_fmadd_ps(x, b0, c10), c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a2 + i);
    c20 = _mm256_fmadd_ps(x, b0, c20), c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a3 + i);
    c30 = _mm256_fmadd_ps(x, b0, c30), c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a4 + i);
    c40 = _mm256_fmadd_ps(x, b0, c40), c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a5 + i);
    c50 = _mm256_fmadd_ps(x, b0, c50), c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  _mm256_storeu_ps(c, c00), _mm256_storeu_ps(c + 8, c01), c += ldc;
  _mm256_storeu_ps(c, c10), _mm256_storeu_ps(c + 8, c11), c += ldc;
  _mm256_storeu_ps(c, c20), _mm256_storeu_ps(c + 8, c21), c += ldc;
  _mm256_storeu_ps(c, c30), _mm256_storeu_ps(c + 8, c31), c += ldc;
  _mm256_storeu_ps(c, c40), _mm256_storeu_ps(c + 8, c41), c += ldc;
  _mm256_storeu_ps(c, c50), _mm256_storeu_ps(c + 8, c51);
}

/// The products and output transform of one block, 16 output channels at a time: M = V U for
/// the 36 positions of those channels (a small buffer, still in L1/L2 when read back), then
/// A^T M A + bias, ReLU, into dst. V (rows x kPos x in_c) stays in L2 for every panel; the
/// transformed filters stream through once per block.
VB_AVX2 void multiply_and_output(const Filter& f, const ConvShape& s, const BlockedTensor& dst, int t0, int count,
                                 int rows, const float* v, float* m, std::size_t panel_first, std::size_t panel_last) {
  const std::size_t ic = static_cast<std::size_t>(f.in_c), oc = static_cast<std::size_t>(f.out_c);
  const std::size_t ldv = kPos * ic, ldm = kPos * kPanel;
  const int oh = s.out_h(), ow = s.out_w();
  const __m256 zero = _mm256_setzero_ps();
  for (std::size_t j = panel_first; j < panel_last; ++j) {
    const float* uj = f.u.get() + j * ic * kPanel;
    for (int p = 0; p < kPos; ++p)
      for (int r = 0; r < rows; r += kRows)
        kernel_6x16(v + p * ic + r * ldv, ldv, uj + static_cast<std::size_t>(p) * ic * oc, f.in_c,
                    m + p * kPanel + r * ldm, ldm);
    for (int tl = 0; tl < count; ++tl) {
      const TileAt at = tile_at(s, t0 + tl);
      const int ny = std::min(kTile, oh - at.y), nx = std::min(kTile, ow - at.x);
      for (int half = 0; half < 2; ++half) {
        const std::size_t cb = 2 * j + static_cast<std::size_t>(half);
        const float* in = m + static_cast<std::size_t>(tl) * ldm + static_cast<std::size_t>(half) * 8;
        __m256 t[kTile][kIn];
        for (int c = 0; c < kIn; ++c) {  // A^T M: down each column
          __m256 col[kIn], o[kTile];
          for (int i = 0; i < kIn; ++i) col[i] = _mm256_load_ps(in + (i * kIn + c) * kPanel);
          output_1d(col, o);
          for (int i = 0; i < kTile; ++i) t[i][c] = o[i];
        }
        const __m256 bias = _mm256_load_ps(f.bias.get() + cb * 8);
        float* base = dst.data + dst.offset + at.n * dst.stride_n + static_cast<std::int64_t>(cb) * dst.stride_cb;
        for (int i = 0; i < ny; ++i) {  // (A^T M) A: along each row
          __m256 o[kTile];
          output_1d(t[i], o);
          float* row = base + (at.y + i) * dst.stride_y + at.x * dst.stride_x;
          for (int x = 0; x < nx; ++x)
            // max(0, NaN) is NaN, as oneDNN's ReLU: a NaN stays visible
            _mm256_storeu_ps(row + x * dst.stride_x, _mm256_max_ps(zero, _mm256_add_ps(o[x], bias)));
        }
      }
    }
  }
}

#endif  // VECBENCH_WINOGRAD_X86

}  // namespace

bool available() {
#ifdef VECBENCH_WINOGRAD_X86
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
#else
  return false;
#endif
}

bool supports(const ConvShape& s) {
  return s.batch >= 1 && s.in_c > 0 && s.in_c % 8 == 0 && s.out_c > 0 && s.out_c % kPanel == 0 && s.pad >= 0 &&
         s.out_h() >= 1 && s.out_w() >= 1;
}

std::size_t Filter::bytes() const {
  return (static_cast<std::size_t>(kPos) * in_c * out_c + static_cast<std::size_t>(out_c)) * sizeof(float);
}

std::shared_ptr<const Filter> make_filter(const float* oihw, const float* bias, int out_c, int in_c) {
  // G (6x3) of F(4x4, 3x3) with the interpolation points 0, 1, -1, 2, -2 and infinity.
  static const double G[kIn][3] = {{1.0 / 4, 0, 0},
                                   {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                   {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                   {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                   {0, 0, 1}};
  auto f = std::make_shared<Filter>();
  f->in_c = in_c;
  f->out_c = out_c;
  f->u = aligned_floats(static_cast<std::size_t>(kPos) * in_c * out_c);
  f->bias = aligned_floats(static_cast<std::size_t>(out_c));
  std::copy(bias, bias + out_c, f->bias.get());
  const std::size_t ic = static_cast<std::size_t>(in_c), oc = static_cast<std::size_t>(out_c);
  for (std::size_t o = 0; o < oc; ++o)
    for (std::size_t c = 0; c < ic; ++c) {
      const float* g = oihw + (o * ic + c) * 9;
      double gg[kIn][3];  // G g
      for (int i = 0; i < kIn; ++i)
        for (int k = 0; k < 3; ++k) gg[i][k] = G[i][0] * g[k] + G[i][1] * g[3 + k] + G[i][2] * g[6 + k];
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < kIn; ++j) {  // (G g) G^T
          const double u = gg[i][0] * G[j][0] + gg[i][1] * G[j][1] + gg[i][2] * G[j][2];
          const std::size_t p = static_cast<std::size_t>(i * kIn + j);
          f->u.get()[p * ic * oc + (o / kPanel) * ic * kPanel + c * kPanel + o % kPanel] = static_cast<float>(u);
        }
    }
  return f;
}

int block_tiles(const ConvShape& s) {
  // A block's V (36 x tiles x in_c floats) in about 512 KiB of a core's L2 (1 MiB on AMD Zen 4,
  // 1.25-2 MiB on Intel), beside the products of 16 output channels and the filters streaming
  // through; the filters are read once per block, so larger blocks read them less often.
  const std::size_t per_tile = static_cast<std::size_t>(kPos) * s.in_c * sizeof(float);
  int rows = static_cast<int>((512u << 10) / per_tile) / kRows * kRows;
  rows = std::clamp(rows, kRows, 16 * kRows);
  const int all = (tile_count(s) + kRows - 1) / kRows * kRows;
  return std::min(rows, all);
}

int block_count(const ConvShape& s) { return (tile_count(s) + block_tiles(s) - 1) / block_tiles(s); }

std::size_t scratch_floats(const ConvShape& s) {
  return static_cast<std::size_t>(kPos) * block_tiles(s) * (s.in_c + kPanel);
}

int channel_groups(const ConvShape& s, int threads) {
  const int blocks = block_count(s), panels = s.out_c / kPanel;
  return std::clamp((std::max(threads, 1) + blocks - 1) / blocks, 1, panels);
}

void run_units(const Filter& f, const ConvShape& s, const BlockedTensor& src, const BlockedTensor& dst, int groups,
               int first, int last, float* scratch) {
  const int per_block = block_tiles(s), tiles = tile_count(s);
  const std::size_t panels = static_cast<std::size_t>(s.out_c / kPanel), g = static_cast<std::size_t>(groups);
  float* v = scratch;
  float* m = scratch + static_cast<std::size_t>(kPos) * per_block * s.in_c;
  int transformed = -1;  // the block whose tiles are in v
#ifndef VECBENCH_WINOGRAD_X86
  if (first < last) throw std::logic_error("winograd::run_units: no AVX2 kernels on this CPU (available() is false)");
#else
  for (int u = first; u < last; ++u) {
    const int b = u / groups;
    const std::size_t group = static_cast<std::size_t>(u % groups);
    const int t0 = b * per_block, count = std::min(per_block, tiles - t0);
    const int rows = (count + kRows - 1) / kRows * kRows;
    if (b != transformed) transform_inputs(s, src, t0, count, rows, v), transformed = b;
    multiply_and_output(f, s, dst, t0, count, rows, v, m, group * panels / g, (group + 1) * panels / g);
  }
#endif
}

}  // namespace vecbench::winograd
