// The bilinear resize arithmetic shared by the CPU resize (resize.hpp) and the CUDA kernel
// (src/input/resize_kernel.cu), so that both give the same floats bit for bit:
//   - each function is compiled for the host and, under nvcc, for the device (VECBENCH_HD);
//   - on the device every multiply and add is an explicitly rounded intrinsic (__fmul_rn,
//     __fadd_rn, __fsub_rn, __fdiv_rn), which nvcc never contracts into an FMA;
//   - on the host the same operations in the same order, compiled with -ffp-contract=off
//     (CMakeLists.txt, on vecbench_core) so that no FMA is formed either where -march enables it.
// No standard library beyond <cmath>/<cstddef>/<cstdint>, so that device code can use it; the
// ResizeMode enum comes from core/base/resize_mode.hpp, which includes nothing.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "vecbench/core/base/resize_mode.hpp"

#if defined(__CUDACC__)
#define VECBENCH_HD __host__ __device__
#else
#define VECBENCH_HD
#endif

// Host code that may contract a*b+c into an FMA would differ from the device's rounding.
#if !defined(__CUDA_ARCH__) && defined(__FP_FAST_FMAF) && !defined(VECBENCH_FP_CONTRACT_OFF)
#error "resize_formula.hpp: FMA is enabled (-march): compile with -ffp-contract=off -DVECBENCH_FP_CONTRACT_OFF=1"
#endif

namespace vecbench {

/// Whether only the host resizes in mode `m` (the CUDA kernel does the bilinear modes alone).
VECBENCH_HD constexpr bool host_only_resize(ResizeMode m) {
  return m != ResizeMode::tf_legacy && m != ResizeMode::bilinear;
}

namespace detail {

/// The two source indices an output index reads and the weight of the second.
struct Tap {
  int lo, hi;
  float frac;
};

// Correctly rounded float arithmetic, never contracted (see the top of the file).
VECBENCH_HD inline float fmul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
VECBENCH_HD inline float fadd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
VECBENCH_HD inline float fsub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
VECBENCH_HD inline float fdiv(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
VECBENCH_HD inline float ffloor(float a) {
#if defined(__CUDA_ARCH__)
  return floorf(a);
#else
  return std::floor(a);
#endif
}
VECBENCH_HD inline int imin(int a, int b) { return a < b ? a : b; }

/// in/out, the scale of both modes.
VECBENCH_HD inline float resize_scale(int in, int out) { return fdiv(static_cast<float>(in), static_cast<float>(out)); }

/// The source tap of output index `i` (0 <= i < out) for an input of `in` samples, `scale` being
/// resize_scale(in, out). For in == out both modes give {i, min(i + 1, in - 1), 0}.
VECBENCH_HD inline Tap resize_tap(int i, int in, float scale, ResizeMode mode) {
  const float fi = static_cast<float>(i);
  float src = mode == ResizeMode::tf_legacy ? fmul(fi, scale) : fsub(fmul(fadd(fi, 0.5f), scale), 0.5f);
  if (src < 0.0f) src = 0.0f;
  const float f = ffloor(src);
  const int lo = imin(static_cast<int>(f), in - 1);
  return Tap{lo, imin(lo + 1, in - 1), fsub(src, f)};
}

/// top = tl + (tr - tl) * fx; bottom = bl + (br - bl) * fx; value = top + (bottom - top) * fy.
VECBENCH_HD inline float bilinear_blend(float tl, float tr, float bl, float br, float fx, float fy) {
  const float top = fadd(tl, fmul(fsub(tr, tl), fx));
  const float bottom = fadd(bl, fmul(fsub(br, bl), fx));
  return fadd(top, fmul(fsub(bottom, top), fy));
}

}  // namespace detail

/// One output pixel (x, y) of resize_rgb_to_chw: reads the interleaved RGB uint8 image `src`
/// (h x w, `row_stride` bytes per row) and writes its three channels into the planar (CHW)
/// out x out float image `dst`. The CUDA kernel is one thread per output pixel calling this;
/// resize_rgb_to_chw gives the same floats (tests/core/test_resize_formula.cpp).
VECBENCH_HD inline void resize_pixel_to_chw(const std::uint8_t* src, int h, int w, std::size_t row_stride, int out,
                                            ResizeMode mode, int x, int y, float* dst) {
  const std::size_t plane = static_cast<std::size_t>(out) * static_cast<std::size_t>(out);
  float* o = dst + static_cast<std::size_t>(y) * static_cast<std::size_t>(out) + static_cast<std::size_t>(x);
  if (h == out && w == out) {  // identity in both modes: just convert
    const std::uint8_t* p = src + static_cast<std::size_t>(y) * row_stride + static_cast<std::size_t>(x) * 3;
    for (int c = 0; c < 3; ++c) o[static_cast<std::size_t>(c) * plane] = p[c];
    return;
  }
  const detail::Tap a = detail::resize_tap(y, h, detail::resize_scale(h, out), mode);
  const detail::Tap b = detail::resize_tap(x, w, detail::resize_scale(w, out), mode);
  const std::uint8_t* r0 = src + static_cast<std::size_t>(a.lo) * row_stride;
  const std::uint8_t* r1 = src + static_cast<std::size_t>(a.hi) * row_stride;
  const int l = b.lo * 3, r = b.hi * 3;
  for (int c = 0; c < 3; ++c)
    o[static_cast<std::size_t>(c) * plane] =
        detail::bilinear_blend(r0[l + c], r0[r + c], r1[l + c], r1[r + c], b.frac, a.frac);
}

}  // namespace vecbench
