// Inception-v3's 1x1 convolutions (the tf2015 graph's 40 a forward, as vecbench's oneDNN engine
// runs them: batch 4, fp32, bias and ReLU fused, one thread) timed with whichever oneDNN this is
// compiled against: Debian's 2.6 or the PyPI wheel onednn-cpu-gomp 3.2 (its brgemm kernels).
// Two binaries, one per version, run interleaved by results/kernels/onednn3-1x1-20261204.sh;
// not part of the CMake build (it links a oneDNN the build does not use).
//   onednn_1x1_versions [blocked|nhwc] [reps]
// blocked: activations in nChw16c (vecbench's layout today); nhwc: channels-last (brgemm's own).
// Prints one line a shape (count a forward, implementation, median ms, GFLOP/s) and the forward's
// sum of count x median, and the core's measured FMA peak (a chain-free loop of 512-bit FMAs, or
// 256-bit where AVX-512 is missing) to read those figures against.
#include <immintrin.h>
#include <omp.h>
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

constexpr int kBatch = 4;  // the default route's batch

struct Shape {
  int count, ic, oc, hw;  // per forward; square maps
};

// From ONEDNN_VERBOSE=1 of `vecbench vectorize --devices cpu --batch 4 --threads 1` on the
// build's tf2015 model: every jit_1x1 execution of one forward.
const std::vector<Shape> kShapes = {
    {1, 64, 80, 73},   {2, 192, 64, 35},  {1, 192, 48, 35},  {1, 192, 32, 35},   {3, 256, 64, 35},
    {1, 256, 48, 35},  {4, 288, 64, 35},  {1, 288, 48, 35},  {12, 768, 192, 17}, {4, 768, 160, 17},
    {2, 768, 128, 17}, {1, 1280, 192, 8}, {1, 1280, 320, 8}, {1, 1280, 384, 8},  {1, 1280, 448, 8},
    {1, 2048, 192, 8}, {1, 2048, 320, 8}, {1, 2048, 384, 8}, {1, 2048, 448, 8},
};

struct Conv {
  dnnl::convolution_forward prim;
  memory src, wei, bias, dst;
  std::string impl;
};

void fill(memory& m, float v) {
  auto* p = static_cast<float*>(m.get_data_handle());
  const size_t n = m.get_desc().get_size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) p[i] = v * static_cast<float>((i % 13) + 1) / 13.f;
}

Conv make(const dnnl::engine& eng, const Shape& s, tag act) {
  const int n = kBatch;
  memory::desc src_d({n, s.ic, s.hw, s.hw}, dt::f32, act);
  memory::desc dst_d({n, s.oc, s.hw, s.hw}, dt::f32, act);
  memory::desc wei_d({s.oc, s.ic, 1, 1}, dt::f32, tag::any);
  memory::desc bias_d({s.oc}, dt::f32, tag::x);
  dnnl::post_ops po;
  dnnl::primitive_attr attr;
#if DNNL_VERSION_MAJOR >= 3
  po.append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  attr.set_post_ops(po);
  dnnl::convolution_forward::primitive_desc pd(eng, dnnl::prop_kind::forward_inference,
                                               dnnl::algorithm::convolution_direct, src_d, wei_d, bias_d, dst_d, {1, 1},
                                               {0, 0}, {0, 0}, attr);
#else
  po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  attr.set_post_ops(po);
  dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_d,
                                      wei_d, bias_d, dst_d, {1, 1}, {0, 0}, {0, 0}),
      attr, eng);
#endif
  Conv c{dnnl::convolution_forward(pd), memory(src_d, eng), memory(pd.weights_desc(), eng),
         memory(bias_d, eng),           memory(dst_d, eng), pd.impl_info_str()};
  fill(c.src, 0.5f);
  fill(c.wei, 0.01f);
  fill(c.bias, 0.1f);
  return c;
}

double median_ms(Conv& c, dnnl::stream& strm, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps + 2; ++r) {
    const auto a = std::chrono::steady_clock::now();
    c.prim.execute(strm,
                   {{DNNL_ARG_SRC, c.src}, {DNNL_ARG_WEIGHTS, c.wei}, {DNNL_ARG_BIAS, c.bias}, {DNNL_ARG_DST, c.dst}});
    strm.wait();
    if (r >= 2) t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// GFLOP/s of one core issuing independent FMAs only: 12 accumulators hide the FMA latency.
constexpr long kPeakIters = 20000000;
#define VECBENCH_FMA_PEAK(NAME, TARGET, V, SET, FMA, LANES)                                        \
  __attribute__((target(TARGET))) double NAME() {                                                  \
    V acc[12];                                                                                     \
    for (int i = 0; i < 12; ++i) acc[i] = SET(0.001f * static_cast<float>(i));                     \
    const V a = SET(0.999999f), b = SET(1e-7f);                                                    \
    const auto t0 = std::chrono::steady_clock::now();                                              \
    for (long n = 0; n < kPeakIters; ++n) {                                                        \
      _Pragma("GCC unroll 12") for (int i = 0; i < 12; ++i) acc[i] = FMA(acc[i], a, b);            \
    }                                                                                              \
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); \
    float sink[LANES], sum = 0;                                                                    \
    for (int i = 0; i < 12; ++i) {                                                                 \
      std::memcpy(sink, &acc[i], sizeof sink);                                                     \
      sum += sink[0];                                                                              \
    }                                                                                              \
    if (sum == 42.f) std::puts("");                                                                \
    return 2.0 * LANES * 12 * static_cast<double>(kPeakIters) / s * 1e-9;                          \
  }
VECBENCH_FMA_PEAK(peak512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, 16)
VECBENCH_FMA_PEAK(peak256, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, 8)
#undef VECBENCH_FMA_PEAK

}  // namespace

int main(int argc, char** argv) {
  const bool nhwc = argc > 1 && std::strcmp(argv[1], "nhwc") == 0;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 15;
  omp_set_num_threads(1);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const dnnl::version_t* v = dnnl_version();
  std::printf("oneDNN %d.%d.%d layout %s\n", v->major, v->minor, v->patch, nhwc ? "nhwc" : "nChw16c");
  double total_ms = 0, total_gflop = 0;
  for (const Shape& s : kShapes) {
    Conv c = make(eng, s, nhwc ? tag::nhwc : tag::nChw16c);
    const double ms = median_ms(c, strm, reps);
    const double gflop = 2.0 * kBatch * s.ic * s.oc * s.hw * s.hw * 1e-9;
    std::printf("ic%d oc%d %dx%d x%d %s %.3f ms %.1f GFLOP/s\n", s.ic, s.oc, s.hw, s.hw, s.count, c.impl.c_str(), ms,
                gflop / ms * 1e3);
    total_ms += s.count * ms;
    total_gflop += s.count * gflop;
  }
  std::printf("total %.2f ms a forward (batch %d), %.1f GFLOP/s\n", total_ms, kBatch, total_gflop / total_ms * 1e3);
  const bool avx512 = __builtin_cpu_supports("avx512f");
  std::printf("fma peak %.1f GFLOP/s (%s)\n", avx512 ? peak512() : peak256(), avx512 ? "avx512" : "avx2");
  return 0;
}
