// Inception-v3's first layer into u8 or bf16 channels-last (include/vecbench/engine/first_conv.hpp).
// The kernel is compiled inside a `#pragma GCC target` region and an anonymous namespace, so that
// no AVX-512 code leaks into other translation units; it runs only where available() says so.
#include "vecbench/engine/first_conv.hpp"

#include "vecbench/core/system/cpu_features.hpp"

#include <cstring>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#define VECBENCH_FIRST_CONV_X86 1
#include <immintrin.h>
#endif

namespace vecbench::first_conv {

namespace {
constexpr int kPixels = 8;  ///< output pixels per register block: 8 x 2 accumulators

#ifdef VECBENCH_FIRST_CONV_X86
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")
// GCC 12 warns on the _mm512_undefined_ps() inside its own _mm512_max_ps (a false positive)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

/// `kPixels` outputs from x0 on, one output row: bias, then the taps in order, ReLU.
inline void block(const Filter& f, const float* img, int in_h, int in_w, int y, int x0, __m512 acc[kPixels][2]) {
  const __m512 b0 = _mm512_load_ps(f.bias), b1 = _mm512_load_ps(f.bias + 16);
  for (int p = 0; p < kPixels; ++p) acc[p][0] = b0, acc[p][1] = b1;
  const std::size_t plane = static_cast<std::size_t>(in_h) * static_cast<std::size_t>(in_w);
  for (int c = 0; c < 3; ++c)
    for (int ky = 0; ky < 3; ++ky) {
      const float* row =
          img + c * plane + static_cast<std::size_t>(2 * y + ky) * static_cast<std::size_t>(in_w) + 2 * x0;
      for (int kx = 0; kx < 3; ++kx) {
        const float* w = f.w + ((c * 3 + ky) * 3 + kx) * kOutChannels;
        const __m512 w0 = _mm512_load_ps(w), w1 = _mm512_load_ps(w + 16);
#pragma GCC unroll 8
        for (int p = 0; p < kPixels; ++p) {
          const __m512 v = _mm512_set1_ps(row[2 * p + kx]);
          acc[p][0] = _mm512_fmadd_ps(v, w0, acc[p][0]);
          acc[p][1] = _mm512_fmadd_ps(v, w1, acc[p][1]);
        }
      }
    }
  const __m512 zero = _mm512_setzero_ps();
  for (int p = 0; p < kPixels; ++p)  // max(v, 0) as oneDNN's ReLU computes it: NaN and -0 give +0
    acc[p][0] = _mm512_max_ps(acc[p][0], zero), acc[p][1] = _mm512_max_ps(acc[p][1], zero);
}

void store_u8(__m512 a0, __m512 a1, __m512 scale, std::uint8_t* out) {
  // round to nearest even (the default rounding mode), then unsigned saturation to 0..255; the
  // values are >= 0 here (after the ReLU)
  const __m128i lo = _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(a0, scale)));
  const __m128i hi = _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(a1, scale)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_set_m128i(hi, lo));
}

void store_bf16(__m512 a0, __m512 a1, std::uint16_t* out) {
  const __m512bh both = _mm512_cvtne2ps_pbh(a1, a0);  // a0's 16 channels in the low half
  std::memcpy(out, &both, sizeof both);
}

void run_isa(const Filter& f, const float* in, int in_h, int in_w, Output kind, float inv_scale, void* dst, int first,
             int last) {
  const int oh = out_dim(in_h), ow = out_dim(in_w);
  const __m512 scale = _mm512_set1_ps(inv_scale);
  __m512 acc[kPixels][2];
  for (int r = first; r < last; ++r) {
    const int n = r / oh, y = r % oh;
    const float* img = in + static_cast<std::size_t>(n) * 3 * static_cast<std::size_t>(in_h) * in_w;
    const std::size_t row_px = static_cast<std::size_t>(r) * static_cast<std::size_t>(ow);
    for (int x0 = 0; x0 < ow; x0 += kPixels) {
      const int x = x0 + kPixels <= ow ? x0 : ow - kPixels;  // the last block overlaps: same values again
      block(f, img, in_h, in_w, y, x, acc);
      for (int p = 0; p < kPixels; ++p) {
        const std::size_t at = (row_px + static_cast<std::size_t>(x + p)) * kOutChannels;
        if (kind == Output::u8)
          store_u8(acc[p][0], acc[p][1], scale, static_cast<std::uint8_t*>(dst) + at);
        else
          store_bf16(acc[p][0], acc[p][1], static_cast<std::uint16_t*>(dst) + at);
      }
    }
  }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif  // VECBENCH_FIRST_CONV_X86

}  // namespace

bool available(Output out) {
#ifdef VECBENCH_FIRST_CONV_X86
  return out == Output::u8 ? cpu_features().avx512_bw_vl : cpu_features().avx512_bf16;
#else
  (void)out;
  return false;
#endif
}

Filter make_filter(const float* oihw, const float* bias) {
  Filter f{};
  for (int o = 0; o < kOutChannels; ++o) {
    for (int t = 0; t < kTaps; ++t) f.w[t * kOutChannels + o] = oihw[o * kTaps + t];
    f.bias[o] = bias[o];
  }
  return f;
}

void run(const Filter& f, const float* in, int in_h, int in_w, Output out, float inv_scale, void* dst, int first,
         int last) {
  if (!available(out)) throw std::logic_error("first_conv::run: this CPU has no kernel for this output");
  if (in_h < 3 || out_dim(in_w) < kPixels) throw std::logic_error("first_conv::run: the input is too small");
#ifdef VECBENCH_FIRST_CONV_X86
  run_isa(f, in, in_h, in_w, out, inv_scale, dst, first, last);
#else
  (void)f, (void)in, (void)inv_scale, (void)dst, (void)first, (void)last;
#endif
}

}  // namespace vecbench::first_conv
