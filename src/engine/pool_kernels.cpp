// Pooling for the int8 and bf16 routes' channels-last activations
// (include/vecbench/engine/pool_kernels.hpp). As in first_conv.cpp, the AVX-512 code sits in a
// `#pragma GCC target` region of an anonymous namespace, so that none leaks into other
// translation units; it runs only where available() says so.
#include "vecbench/engine/pool_kernels.hpp"

#include "vecbench/core/system/cpu_features.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#define VECBENCH_POOL_X86 1
#include <immintrin.h>
#endif

namespace vecbench::pool_kernels {

namespace {

/// The window of output position o along an axis: input positions [lo, hi).
struct Window {
  int lo, hi;
};
inline Window window(int o, int in, int k, int stride, int pad) {
  const int start = o * stride - pad;
  return {std::max(start, 0), std::min(start + k, in)};
}

template <typename T>
inline T* pixel(const Tensor& t, int i, int y, int x) {
  const std::ptrdiff_t at = ((static_cast<std::ptrdiff_t>(i) * t.h + y) * t.w + x) * t.pixel_stride;
  return static_cast<T*>(t.data) + at;
}

#ifdef VECBENCH_POOL_X86
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")
// GCC 12 warns on the _mm512_undefined_ps() inside its own _mm512_max_ps (a false positive)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

/// 16 u8 values as floats times `scale` (> 0), saturated to 0..255 in float and rounded to
/// nearest even, as oneDNN's reorder does.
inline __m128i requantize16(__m128i v, __m512 scale) {
  const __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v)), scale);
  return _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(_mm512_min_ps(f, _mm512_set1_ps(255.0f))));
}

void max_u8(const Tensor& src, const Tensor& dst, int k, int stride, int pad, float rescale, int first, int last) {
  const bool requant = rescale != 1.0f;
  const __m512 scale = _mm512_set1_ps(rescale);
  for (int r = first; r < last; ++r) {
    const int i = r / dst.h, oy = r % dst.h;
    const Window wy = window(oy, src.h, k, stride, pad);
    for (int ox = 0; ox < dst.w; ++ox) {
      const Window wx = window(ox, src.w, k, stride, pad);
      auto* out = pixel<std::uint8_t>(dst, i, oy, ox);
      for (int ch = 0; ch < src.c; ch += 64) {
        const __mmask64 m = src.c - ch >= 64 ? ~__mmask64{0} : (__mmask64{1} << (src.c - ch)) - 1;
        __m512i best = _mm512_setzero_si512();  // u8 values are >= 0: zero is below or at every one
        for (int y = wy.lo; y < wy.hi; ++y)
          for (int x = wx.lo; x < wx.hi; ++x)
            best = _mm512_max_epu8(best, _mm512_maskz_loadu_epi8(m, pixel<const std::uint8_t>(src, i, y, x) + ch));
        if (requant) {
          alignas(64) std::uint8_t q[64];
          _mm512_store_si512(q, best);
          for (int j = 0; j < 4; ++j) {
            const __m128i part = _mm_load_si128(reinterpret_cast<const __m128i*>(q + 16 * j));
            _mm_store_si128(reinterpret_cast<__m128i*>(q + 16 * j), requantize16(part, scale));
          }
          best = _mm512_load_si512(q);
        }
        _mm512_mask_storeu_epi8(out + ch, m, best);
      }
    }
  }
}

/// 16 bf16 values widened to the floats they are.
inline __m512 load_bf16(const std::uint16_t* p) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

void max_bf16(const Tensor& src, const Tensor& dst, int k, int stride, int pad, int first, int last) {
  for (int r = first; r < last; ++r) {
    const int i = r / dst.h, oy = r % dst.h;
    const Window wy = window(oy, src.h, k, stride, pad);
    for (int ox = 0; ox < dst.w; ++ox) {
      const Window wx = window(ox, src.w, k, stride, pad);
      auto* out = pixel<std::uint16_t>(dst, i, oy, ox);
      for (int ch = 0; ch < src.c; ch += 16) {
        // max(v, best) keeps best where v is a NaN: a NaN never reaches the output (a window of
        // NaNs alone gives -inf)
        __m512 best = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
        for (int y = wy.lo; y < wy.hi; ++y)
          for (int x = wx.lo; x < wx.hi; ++x)
            best = _mm512_max_ps(load_bf16(pixel<const std::uint16_t>(src, i, y, x) + ch), best);
        // the maximum is one of the bf16 values: its top half is that value, exactly
        const __m256i bits = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(best), 16));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + ch), bits);
      }
    }
  }
}

void avg3x3_relu_isa(const Tensor& src, Type out, float inv_scale, const Tensor& dst, int first, int last) {
  const __m512 scale = _mm512_set1_ps(inv_scale), zero = _mm512_setzero_ps();
  for (int r = first; r < last; ++r) {
    const int i = r / src.h, oy = r % src.h;
    const Window wy = window(oy, src.h, 3, 1, 1);
    for (int ox = 0; ox < src.w; ++ox) {
      const Window wx = window(ox, src.w, 3, 1, 1);
      const __m512 count = _mm512_set1_ps(static_cast<float>((wy.hi - wy.lo) * (wx.hi - wx.lo)));
      for (int ch = 0; ch < src.c; ch += 16) {
        __m512 sum = _mm512_setzero_ps();
        for (int y = wy.lo; y < wy.hi; ++y)
          for (int x = wx.lo; x < wx.hi; ++x)
            sum = _mm512_add_ps(sum, _mm512_loadu_ps(pixel<const float>(src, i, y, x) + ch));
        const __m512 v = _mm512_max_ps(_mm512_div_ps(sum, count), zero);  // max(v, 0): a NaN gives 0
        if (out == Type::u8) {
          const __m128i q = _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v, scale)));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(pixel<std::uint8_t>(dst, i, oy, ox) + ch), q);
        } else {
          const __m256bh b = _mm512_cvtneps_pbh(v);
          std::memcpy(pixel<std::uint16_t>(dst, i, oy, ox) + ch, &b, sizeof b);
        }
      }
    }
  }
}

void global_avg_isa(Type t, const Tensor& src, float scale, float* dst, int first, int last) {
  const int hw = src.h * src.w;
  const __m512 mul = _mm512_set1_ps(scale / static_cast<float>(hw));
  for (int i = first; i < last; ++i)
    for (int ch = 0; ch < src.c; ch += 16) {
      // an image's pixels follow each other pixel_stride elements apart, row after row
      __m512 mean;
      if (t == Type::u8) {
        const std::uint8_t* at = pixel<const std::uint8_t>(src, i, 0, 0) + ch;
        __m512i sum = _mm512_setzero_si512();
        for (int p = 0; p < hw; ++p, at += src.pixel_stride)
          sum = _mm512_add_epi32(sum, _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at))));
        mean = _mm512_mul_ps(_mm512_cvtepi32_ps(sum), mul);
      } else {
        const std::uint16_t* at = pixel<const std::uint16_t>(src, i, 0, 0) + ch;
        __m512 sum = _mm512_setzero_ps();
        for (int p = 0; p < hw; ++p, at += src.pixel_stride) sum = _mm512_add_ps(sum, load_bf16(at));
        mean = _mm512_mul_ps(sum, mul);
      }
      _mm512_storeu_ps(dst + static_cast<std::ptrdiff_t>(i) * src.c + ch, mean);
    }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif  // VECBENCH_POOL_X86

void check(bool ok, const char* kernel, const char* why) {
  if (!ok) throw std::invalid_argument(std::string("pool_kernels::") + kernel + ": " + why);
}

bool shapes_fit(const Tensor& src, const Tensor& dst, int k, int stride, int pad) {
  return src.n > 0 && src.n == dst.n && src.c == dst.c && src.c > 0 && src.c % 16 == 0 && src.pixel_stride >= src.c &&
         dst.pixel_stride >= dst.c && k >= 1 && stride >= 1 && pad >= 0 && pad < k && src.h + 2 * pad >= k &&
         src.w + 2 * pad >= k && dst.h == out_dim(src.h, k, stride, pad) && dst.w == out_dim(src.w, k, stride, pad);
}

}  // namespace

bool available(Type t) {
#ifdef VECBENCH_POOL_X86
  return t == Type::u8 ? cpu_features().avx512_bw_vl : cpu_features().avx512_bf16;
#else
  (void)t;
  return false;
#endif
}

bool fits(Type t, const Tensor& src, const Tensor& dst, int k, int stride, int pad) {
  return available(t) && shapes_fit(src, dst, k, stride, pad);
}

void max_pool(Type t, const Tensor& src, const Tensor& dst, int k, int stride, int pad, float rescale, int first,
              int last) {
  check(fits(t, src, dst, k, stride, pad), "max_pool", "this CPU or these shapes have no kernel");
  check(src.data && dst.data, "max_pool", "no data");
  check(t == Type::u8 || rescale == 1.0f, "max_pool", "only u8 is requantized");
  check(0 <= first && first <= last && last <= src.n * dst.h, "max_pool", "rows out of range");
#ifdef VECBENCH_POOL_X86
  if (t == Type::u8)
    max_u8(src, dst, k, stride, pad, rescale, first, last);
  else
    max_bf16(src, dst, k, stride, pad, first, last);
#endif
}

void avg3x3_relu(const Tensor& src, Type out, float inv_scale, const Tensor& dst, int first, int last) {
  check(fits(out, src, dst, 3, 1, 1), "avg3x3_relu", "this CPU or these shapes have no kernel");
  check(src.data && dst.data, "avg3x3_relu", "no data");
  check(0 <= first && first <= last && last <= src.n * src.h, "avg3x3_relu", "rows out of range");
#ifdef VECBENCH_POOL_X86
  avg3x3_relu_isa(src, out, inv_scale, dst, first, last);
#else
  (void)inv_scale;
#endif
}

void global_avg(Type t, const Tensor& src, float scale, float* dst, int first, int last) {
  check(available(t), "global_avg", "this CPU has no kernel");
  check(src.data && dst && src.c > 0 && src.c % 16 == 0 && src.pixel_stride >= src.c && src.h > 0 && src.w > 0,
        "global_avg", "these shapes have no kernel");
  check(0 <= first && first <= last && last <= src.n, "global_avg", "images out of range");
#ifdef VECBENCH_POOL_X86
  global_avg_isa(t, src, scale, dst, first, last);
#else
  (void)scale;
#endif
}

}  // namespace vecbench::pool_kernels
