// The oneDNN engine's 3x3, 5x5, 1x7, 7x1, 1x3 and 3x1 stride-1 layers on one core: vecbench's
// Winograd F(4x4, 3x3), F(2x2, 5x5), F(4, 7) and F(4, 3) kernels (engine/winograd.hpp) against oneDNN's direct
// convolution (what the engine ran on AVX2 CPUs before) and, on AVX-512 CPUs, oneDNN's Winograd run image by image as
// the engine ran it there before (64 or more input channels only; skipped elsewhere). Same layout (nChw16c with
// AVX-512, nChw8c otherwise), same fused bias + ReLU. Counter `GFLOPs` is the direct convolution's arithmetic per
// second, so the columns are comparable. Also the int8/bf16 routes' first layer: oneDNN's f32 layer and reorder
// against vecbench's kernel (engine/first_conv.hpp).
//   ./build/bench/vecbench_bench_winograd --benchmark_repetitions=5
//     --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdint>
#include <dnnl.hpp>
#include <random>
#include <vector>

#include "vecbench/core/base/aligned.hpp"
#include "vecbench/engine/first_conv.hpp"
#include "vecbench/engine/winograd.hpp"

using namespace vecbench;

namespace {

/// Inception-v3's 3x3, 1x7 and 7x1 stride-1 layers: in channels, out channels, input size,
/// padding (on the kernel's long axes), kernel.
struct Layer {
  const char* name;
  int in_c, out_c, size, pad;
  winograd::Kernel kernel = winograd::Kernel::k3x3;
};
constexpr Layer kLayers[] = {
    {"Conv2d_2a", 32, 32, 149, 0},
    {"Conv2d_2b", 32, 64, 147, 1},
    {"Conv2d_4a", 80, 192, 73, 0},
    {"Mixed_5x.3x3dbl_2", 64, 96, 35, 1},
    {"Mixed_5x.3x3dbl_3", 96, 96, 35, 1},
    {"Mixed_7x.3x3dbl_2", 448, 384, 8, 1},
    {"Mixed_6b.7x7_2 1x7", 128, 128, 17, 3, winograd::Kernel::k1x7},
    {"Mixed_6b.7x7_3 7x1", 128, 192, 17, 3, winograd::Kernel::k7x1},
    {"Mixed_6c.7x7_2 1x7", 160, 160, 17, 3, winograd::Kernel::k1x7},
    {"Mixed_6e.7x7_2 1x7", 192, 192, 17, 3, winograd::Kernel::k1x7},
    {"Mixed_6e.7x7_3 7x1", 192, 192, 17, 3, winograd::Kernel::k7x1},
    {"Mixed_7x.3x3_2a 1x3", 384, 384, 8, 1, winograd::Kernel::k1x3},
    {"Mixed_7x.3x3dbl_3b 3x1", 384, 384, 8, 1, winograd::Kernel::k3x1},
    {"Mixed_5x.5x5_2 5x5", 48, 64, 35, 2, winograd::Kernel::k5x5},
};

std::vector<float> random_floats(std::size_t n, float scale) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

/// The channel block of the engine's layout here: 16 where the kernels run AVX-512, else 8.
int block_here() { return winograd::available(16) ? 16 : 8; }

winograd::ConvShape shape_of(const Layer& l, int batch) {
  return {batch, l.in_c, l.out_c, l.size, l.size, l.pad, block_here(), l.kernel};
}

double direct_flops(const Layer& l, int batch) {
  const winograd::ConvShape s = shape_of(l, batch);
  return 2.0 * batch * l.in_c * l.out_c * s.out_h() * s.out_w() * s.kh() * s.kw();
}

void BM_Winograd(benchmark::State& st) {
  const Layer& l = kLayers[st.range(0)];
  const int batch = static_cast<int>(st.range(1));
  if (!winograd::available()) return st.SkipWithError("no AVX2+FMA");
  const int bl = block_here();
  const winograd::ConvShape s = shape_of(l, batch);
  // 64-byte aligned, as the engine's arena
  const auto in_v = random_floats(static_cast<std::size_t>(batch) * l.in_c * l.size * l.size, 1.0f);
  const AlignedFloats in = aligned_floats(in_v.size()),
                      out = aligned_floats(static_cast<std::size_t>(batch) * l.out_c * s.out_h() * s.out_w()),
                      scratch = aligned_floats(winograd::scratch_floats(s));
  std::copy(in_v.begin(), in_v.end(), in.get());
  const auto w = random_floats(static_cast<std::size_t>(l.out_c) * l.in_c * s.kh() * s.kw(), 0.05f);
  const auto b = random_floats(static_cast<std::size_t>(l.out_c), 0.1f);
  const auto f = winograd::make_filter(w.data(), b.data(), l.out_c, l.in_c, bl, l.kernel);
  const std::int64_t b64 = bl;
  winograd::BlockedTensor src{in.get(), 0, int64_t{l.in_c} * l.size * l.size, b64 * l.size * l.size, b64 * l.size, b64};
  winograd::BlockedTensor dst{
      out.get(), 0, int64_t{l.out_c} * s.out_h() * s.out_w(), b64 * s.out_h() * s.out_w(), b64 * s.out_w(), b64};
  for (auto _ : st) winograd::run_units(*f, s, src, dst, 1, 0, winograd::block_count(s), scratch.get());
  st.SetLabel(l.name);
  st.counters["GFLOPs"] = benchmark::Counter(direct_flops(l, batch), benchmark::Counter::kIsIterationInvariantRate,
                                             benchmark::Counter::kIs1000);
}

/// oneDNN's convolution of `algo` on `batch` images, run `runs` times per iteration on successive
/// images' buffers (oneDNN's Winograd: one image at a time, as the engine ran it).
void one_dnn(benchmark::State& st, dnnl::algorithm algo, int batch, int runs) {
  const Layer& l = kLayers[st.range(0)];
  omp_set_num_threads(1);
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const winograd::ConvShape s = shape_of(l, batch);
  const tag fmt = block_here() == 16 ? tag::nChw16c : tag::nChw8c;
  dnnl::memory::desc src_md({batch, l.in_c, l.size, l.size}, dt::f32, fmt);
  dnnl::memory::desc dst_md({batch, l.out_c, s.out_h(), s.out_w()}, dt::f32, fmt);
  const dnnl::memory::dims w_dims{l.out_c, l.in_c, s.kh(), s.kw()};
  dnnl::memory::desc w_md(w_dims, dt::f32, tag::any), b_md({l.out_c}, dt::f32, tag::x);
  dnnl::post_ops po;
  po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  dnnl::convolution_forward::primitive_desc pd;
  try {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algo, src_md, w_md, b_md, dst_md, {1, 1},
                                      {s.pad_y(), s.pad_x()}, {s.pad_y(), s.pad_x()});
    pd = dnnl::convolution_forward::primitive_desc(d, attr, eng);
  } catch (const dnnl::error&) {
    return st.SkipWithError("oneDNN has no such convolution for this layer here");
  }
  auto w = random_floats(static_cast<std::size_t>(l.out_c) * l.in_c * s.kh() * s.kw(), 0.05f);
  dnnl::memory w_user({w_dims, dt::f32, tag::oihw}, eng, w.data());
  dnnl::memory w_packed(pd.weights_desc(), eng), src(src_md, eng), dst(dst_md, eng), bias(b_md, eng);
  dnnl::reorder(w_user, w_packed).execute(strm, w_user, w_packed);
  const auto in = random_floats(static_cast<std::size_t>(batch) * l.in_c * l.size * l.size, 1.0f);
  std::copy(in.begin(), in.end(), static_cast<float*>(src.get_data_handle()));
  dnnl::convolution_forward conv(pd);
  for (auto _ : st) {
    for (int r = 0; r < runs; ++r)
      conv.execute(strm,
                   {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w_packed}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}});
    strm.wait();
  }
  st.SetLabel(std::string(l.name) + " " + pd.impl_info_str());
  st.counters["GFLOPs"] = benchmark::Counter(
      direct_flops(l, batch * runs), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_OneDnnDirect(benchmark::State& st) {
  one_dnn(st, dnnl::algorithm::convolution_direct, static_cast<int>(st.range(1)), 1);
}

void BM_OneDnnWinogradPerImage(benchmark::State& st) {
  if (block_here() != 16) return st.SkipWithError("oneDNN 2.x has Winograd in its AVX-512 code only");
  if (kLayers[st.range(0)].kernel != winograd::Kernel::k3x3) return st.SkipWithError("oneDNN's Winograd is 3x3 only");
  one_dnn(st, dnnl::algorithm::convolution_winograd, 1, static_cast<int>(st.range(1)));
}

/// Transforming a layer's filters (part of every start-up: the engine does it once per process).
void BM_MakeFilter(benchmark::State& st) {
  const Layer& l = kLayers[st.range(0)];
  const winograd::ConvShape s = shape_of(l, 1);
  const auto w = random_floats(static_cast<std::size_t>(l.out_c) * l.in_c * s.kh() * s.kw(), 0.05f);
  const auto b = random_floats(static_cast<std::size_t>(l.out_c), 0.1f);
  for (auto _ : st)
    benchmark::DoNotOptimize(winograd::make_filter(w.data(), b.data(), l.out_c, l.in_c, s.block, l.kernel));
  st.SetLabel(l.name);
}

/// The int8/bf16 routes' first layer (Conv2d_1a: 3 -> 32, 3x3, stride 2) on 4 images, one core:
/// oneDNN's f32 convolution into its blocked layout and the reorder to channels-last u8 (arg 0) or
/// bf16 (arg 1), as the routes ran it before vecbench's kernel (engine/first_conv.hpp), and that kernel.
void first_layer(benchmark::State& st, bool own) {
  using dnnl::memory;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  const bool u8 = st.range(0) == 0;
  const auto kind = u8 ? first_conv::Output::u8 : first_conv::Output::bf16;
  if (!first_conv::available(kind)) return st.SkipWithError("no kernel for this output here");
  omp_set_num_threads(1);
  const int n = 4, size = 299, o = first_conv::out_dim(size);
  const auto in = random_floats(static_cast<std::size_t>(n) * 3 * size * size, 1.0f);
  const auto w = random_floats(first_conv::kOutChannels * first_conv::kTaps, 0.3f);
  const auto b = random_floats(first_conv::kOutChannels, 0.1f);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  memory src({{n, 3, size, size}, dt::f32, tag::nchw}, eng, const_cast<float*>(in.data()));
  memory q({{n, first_conv::kOutChannels, o, o}, u8 ? dt::u8 : dt::bf16, tag::nhwc}, eng);
  if (own) {
    const first_conv::Filter f = first_conv::make_filter(w.data(), b.data());
    for (auto _ : st) first_conv::run(f, in.data(), size, size, kind, 100.0f, q.get_data_handle(), 0, n * o);
  } else {
    memory wu({{first_conv::kOutChannels, 3, 3, 3}, dt::f32, tag::oihw}, eng, const_cast<float*>(w.data()));
    memory bias({{first_conv::kOutChannels}, dt::f32, tag::x}, eng, const_cast<float*>(b.data()));
    dnnl::post_ops po;
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    dnnl::primitive_attr relu, scale;
    relu.set_post_ops(po);
    if (u8) scale.set_output_scales(0, {100.0f});
    dnnl::convolution_forward::primitive_desc pd(
        dnnl::convolution_forward::desc(
            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src.get_desc(),
            memory::desc({first_conv::kOutChannels, 3, 3, 3}, dt::f32, tag::any), bias.get_desc(),
            memory::desc({n, first_conv::kOutChannels, o, o}, dt::f32, tag::nChw16c), {2, 2}, {0, 0}, {0, 0}),
        relu, eng);
    memory wp(pd.weights_desc(), eng), y(pd.dst_desc(), eng);
    dnnl::reorder(wu, wp).execute(strm, wu, wp);
    dnnl::convolution_forward conv(pd);
    dnnl::reorder to_q(dnnl::reorder::primitive_desc(y, q, scale));
    for (auto _ : st) {
      conv.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wp}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, y}});
      to_q.execute(strm, y, q);
      strm.wait();
    }
  }
  st.SetLabel(u8 ? "u8" : "bf16");
  st.counters["GFLOPs"] =
      benchmark::Counter(2.0 * n * o * o * first_conv::kOutChannels * first_conv::kTaps,
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
void BM_FirstLayerOneDnn(benchmark::State& st) { first_layer(st, false); }
void BM_FirstLayerOwn(benchmark::State& st) { first_layer(st, true); }

void shapes(benchmark::internal::Benchmark* b) {
  for (int i = 0; i < static_cast<int>(std::size(kLayers)); ++i)
    for (int batch : {1, 4}) b->Args({i, batch});
  b->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_Winograd)->Apply(shapes);
BENCHMARK(BM_OneDnnDirect)->Apply(shapes);
BENCHMARK(BM_OneDnnWinogradPerImage)->Apply(shapes);
BENCHMARK(BM_MakeFilter)->DenseRange(0, static_cast<int>(std::size(kLayers)) - 1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FirstLayerOneDnn)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FirstLayerOwn)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
