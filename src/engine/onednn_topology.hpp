// Inception-v3 as a oneDNN network for one batch size (private to src/engine/): the topology
// (the stem, blocks A-E of the Mixed layers, the global pool) on the layers of onednn_pool.hpp
// and onednn_conv.hpp; OneDnnInception (onednn_inception.cpp) runs it.
#pragma once
#include <array>
#include <cassert>
#include <memory>
#include <string>

#include "onednn_pool.hpp"
#include "vecbench/engine/first_conv.hpp"

namespace vecbench::onednn_detail {

/// The primitives of one forward pass for one batch size, with their weights packed for them.
class Graph : public PoolLayers {
 public:
  /// `share` of `shares`: this replica's place among the replicas building the same network at
  /// once (make_primitives).
  Graph(const InceptionWeights& wts, const OneDnnOptions& opt, dnnl::engine& eng, int n, int threads, int share = 0,
        int shares = 1)
      : PoolLayers(wts, opt, eng, n, threads) {
    // The layouts and kernels of this CPU's route (engine/cpu_route.hpp): one blocked layout for
    // every f32 activation (16 channels per block on AVX-512, 8 on AVX2); channels-last for int8
    // and for bf16 on AMX. The engine's own Winograd (engine/winograd.hpp) on every 3x3, 5x5, 1x7,
    // 7x1, 1x3 and 3x1 stride-1 layer: oneDNN 2.x has none in its AVX2 code and none but 3x3, and
    // on AVX-512 its 3x3 one takes fewer layers and runs slower
    // (results/kernels/winograd-avx512-20261203.md); layers these kernels don't fit run oneDNN's
    // direct code.
    f32_fmt_ = format_of(route_.f32_layout);
    fmt_ = format_of(route_.layout);
    act_dt_ = opt.precision == Precision::bf16 ? dt::bf16 : opt.precision == Precision::int8 ? dt::u8 : dt::f32;
    if (int8() && !opt.int8_ranges)
      throw ReplicaError(wts_.source + ": the int8 route needs a calibration (onednn engine)");
    build();
    make_primitives(share, shares);
    arena_bytes_ = arena_.place(ops_);
    if (scratch_floats_) scratch_ = aligned_bytes(scratch_floats_ * sizeof(float) * static_cast<std::size_t>(threads_));
    ++g_builds;
  }

  int batch() const { return n_; }
  std::size_t arena_bytes() const { return arena_bytes_; }

  /// Makes the ops' primitives (oneDNN generates each one's code here: most of an int8 or bf16
  /// start). Replicas building the same network at once share identical primitives through
  /// oneDNN's primitive cache, where one waits while another generates; each starts at its own
  /// share of the list, so that they generate different primitives side by side and then find
  /// the rest in the cache.
  void make_primitives(int share, int shares) {
    const std::size_t n = ops_.size();
    const std::size_t first =
        shares > 1 ? n * static_cast<std::size_t>(share % shares) / static_cast<std::size_t>(shares) : 0;
    for (std::size_t j = 0; j < n; ++j) {
      Op& op = ops_[(first + j) % n];
      if (!op.own) op.prim = dnnl::primitive(op.pd.get());
    }
  }

  void run(dnnl::stream& s, const float* in, float* out) {
    stream_ = &s;
    in_user_.set_data_handle(const_cast<float*>(in));
    out_user_.set_data_handle(out);
    for (auto& op : ops_) {
      if (op.own)
        op.own();
      else
        op.prim.execute(s, op.args);
    }
    s.wait();
  }

 private:
  Act block_a(const std::string& b, const Act& x) {  // Mixed_5b..5d
    Concat cat{new_point(b,
                         out_channels(b + ".branch1x1") + out_channels(b + ".branch5x5_2") +
                             out_channels(b + ".branch3x3dbl_3") + out_channels(b + ".branch_pool"),
                         x.h, x.w)};
    conv_to(cat, b + ".branch1x1", x);
    conv_to(cat, b + ".branch5x5_2", conv(b + ".branch5x5_1", x));
    conv_to(cat, b + ".branch3x3dbl_3", conv(b + ".branch3x3dbl_2", conv(b + ".branch3x3dbl_1", x)));
    pool_branch(cat, b + ".branch_pool", x);
    return cat.out;
  }
  Act block_b(const std::string& b, const Act& x) {  // Mixed_6a
    const int h = out_dim(x.h, 3, 2, 0), w = out_dim(x.w, 3, 2, 0);
    Concat cat{new_point(b, out_channels(b + ".branch3x3") + out_channels(b + ".branch3x3dbl_3") + x.c, h, w)};
    conv_to(cat, b + ".branch3x3", x, 2, 0);
    conv_to(cat, b + ".branch3x3dbl_3", conv(b + ".branch3x3dbl_2", conv(b + ".branch3x3dbl_1", x)), 2, 0);
    pool_into(algorithm::pooling_max, x, slice(cat, x.c), 3, 2, 0, cat.out.scale);
    return cat.out;
  }
  Act block_c(const std::string& b, const Act& x) {  // Mixed_6b..6e
    Concat cat{new_point(b,
                         out_channels(b + ".branch1x1") + out_channels(b + ".branch7x7_3") +
                             out_channels(b + ".branch7x7dbl_5") + out_channels(b + ".branch_pool"),
                         x.h, x.w)};
    conv_to(cat, b + ".branch1x1", x);
    conv_to(cat, b + ".branch7x7_3", conv(b + ".branch7x7_2", conv(b + ".branch7x7_1", x)));
    Act d = conv(b + ".branch7x7dbl_1", x);
    for (const char* s : {".branch7x7dbl_2", ".branch7x7dbl_3", ".branch7x7dbl_4"}) d = conv(b + s, d);
    conv_to(cat, b + ".branch7x7dbl_5", d);
    pool_branch(cat, b + ".branch_pool", x);
    return cat.out;
  }
  Act block_d(const std::string& b, const Act& x) {  // Mixed_7a
    const int h = out_dim(x.h, 3, 2, 0), w = out_dim(x.w, 3, 2, 0);
    Concat cat{new_point(b, out_channels(b + ".branch3x3_2") + out_channels(b + ".branch7x7x3_4") + x.c, h, w)};
    conv_to(cat, b + ".branch3x3_2", conv(b + ".branch3x3_1", x), 2, 0);
    Act t = conv(b + ".branch7x7x3_1", x);
    t = conv(b + ".branch7x7x3_3", conv(b + ".branch7x7x3_2", t));
    conv_to(cat, b + ".branch7x7x3_4", t, 2, 0);
    pool_into(algorithm::pooling_max, x, slice(cat, x.c), 3, 2, 0, cat.out.scale);
    return cat.out;
  }
  Act block_e(const std::string& b, const Act& x, bool max_pool_branch) {  // Mixed_7b, 7c
    Concat cat{new_point(b,
                         out_channels(b + ".branch1x1") + out_channels(b + ".branch3x3_2a") +
                             out_channels(b + ".branch3x3_2b") + out_channels(b + ".branch3x3dbl_3a") +
                             out_channels(b + ".branch3x3dbl_3b") + out_channels(b + ".branch_pool"),
                         x.h, x.w)};
    conv_to(cat, b + ".branch1x1", x);
    Act t = conv(b + ".branch3x3_1", x);
    conv_to(cat, b + ".branch3x3_2a", t);
    conv_to(cat, b + ".branch3x3_2b", t);
    Act d = conv(b + ".branch3x3dbl_2", conv(b + ".branch3x3dbl_1", x));
    conv_to(cat, b + ".branch3x3dbl_3a", d);
    conv_to(cat, b + ".branch3x3dbl_3b", d);
    if (max_pool_branch)
      conv_to(cat, b + ".branch_pool", pool(algorithm::pooling_max, x, 3, 1, 1));
    else
      pool_branch(cat, b + ".branch_pool", x);
    return cat.out;
  }

  void build() {
    const int s = wts_.input_size;
    in_user_ = memory({{n_, 3, s, s}, dt::f32, tag::nchw}, eng_, DNNL_MEMORY_NONE);
    // The input normalization is a per-channel affine map; Conv2d_1a has no padding, so it folds
    // into that layer's weights and bias exactly (up to float rounding).
    const auto& l1 = layer("Conv2d_1a_3x3", 3);
    first_ = l1;
    const std::size_t per_in = static_cast<std::size_t>(l1.shape[2] * l1.shape[3]);
    for (int64_t o = 0; o < l1.shape[0]; ++o) {
      double shift = 0.0;
      for (int c = 0; c < 3; ++c) {
        const float scale = 1.0f / (wts_.input_div * wts_.input_std[c]);
        const float offset = -wts_.input_mean[c] / wts_.input_std[c];
        float* w = &first_.weight[(static_cast<std::size_t>(o) * 3 + c) * per_in];
        for (std::size_t k = 0; k < per_in; ++k) {
          shift += static_cast<double>(w[k]) * offset;
          w[k] *= scale;
        }
      }
      first_.bias[o] += static_cast<float>(shift);
    }
    // The first layer (3 input channels, from the caller's NCHW floats) runs in f32: oneDNN 2.6
    // has no bf16 or int8 kernel for it, only its reference code (~0.6 s per image). int8 and
    // bf16 take its output quantized: by vecbench's kernel straight into their channels-last
    // layout where it runs (first_conv.hpp), else from oneDNN's f32 output by a reorder.
    if (own_first_layer_runs()) {
      const Act x = new_point("Conv2d_1a_3x3", static_cast<int>(l1.shape[0]), out_dim(s, 3, 2, 0), out_dim(s, 3, 2, 0));
      own_first_layer(x);
      return build_rest(x);
    }
    const dt act_dt = act_dt_;
    const tag fmt = fmt_;
    act_dt_ = dt::f32;
    fmt_ = f32_fmt_;
    Act y = new_act(static_cast<int>(l1.shape[0]), out_dim(s, 3, 2, 0), out_dim(s, 3, 2, 0));
    conv_into("Conv2d_1a_3x3", first_, in_user_, y.mem, 2, 0, 0);
    observe("Conv2d_1a_3x3", y);
    act_dt_ = act_dt;
    fmt_ = fmt;
    Act x = y;
    if (act_dt_ != dt::f32) {  // bf16 or u8 from here on
      x = new_point("Conv2d_1a_3x3", y.c, y.h, y.w);
      dnnl::primitive_attr attr;
      if (int8()) attr.set_output_scales(0, {1.0f / x.scale});
      ops_.emplace_back(dnnl::reorder::primitive_desc(y.mem, x.mem, attr),
                        std::unordered_map<int, memory>{{DNNL_ARG_FROM, y.mem}, {DNNL_ARG_TO, x.mem}});
    }
    build_rest(x);
  }

  first_conv::Output first_conv_output() const { return int8() ? first_conv::Output::u8 : first_conv::Output::bf16; }
  /// Whether Conv2d_1a runs vecbench's kernel (engine/first_conv.hpp) from the caller's floats
  /// straight into u8 or bf16 channels-last: where the route says so for this CPU (the output
  /// fingerprint reads it too) and the layer has its shape; else oneDNN's f32 convolution and a
  /// reorder (also with OneDnnOptions::own_first_layer off).
  bool own_first_layer_runs() const {
    const std::array<int64_t, 4> shape{first_conv::kOutChannels, 3, 3, 3};
    const bool runs = route_.own_first_layer && first_.shape == shape && first_conv::out_dim(wts_.input_size) >= 8;
    assert(!runs || fmt_ == tag::nhwc);  // the layout the route's own first layer counts on
    return runs;
  }
  /// Conv2d_1a by that kernel into `x` (Conv2d_1a's quantization point).
  void own_first_layer(const Act& x) {
    const auto kind = first_conv_output();
    const int s = wts_.input_size;
    auto f =
        std::make_shared<const first_conv::Filter>(first_conv::make_filter(first_.weight.data(), first_.bias.data()));
    const float inv_scale = int8() ? 1.0f / x.scale : 1.0f;
    const int rows = n_ * x.h, threads = std::min(threads_, rows);
    memory in = in_user_, out = x.mem;
    ops_.emplace_back(
        [f, in, out, s, kind, inv_scale, rows, threads]() {
          const auto* src = static_cast<const float*>(in.get_data_handle());
          void* dst = out.get_data_handle();
          split_rows(threads, rows, [&](int first, int last) {
            // cannot throw here: own_first_layer_runs() checked what run() checks
            first_conv::run(*f, src, s, s, kind, inv_scale, dst, first, last);
          });
        },
        Args{{DNNL_ARG_SRC, in_user_}, {DNNL_ARG_DST, x.mem}});
    ++g_own_first_layers;
  }

  /// The network from Conv2d_2a on, `x` being Conv2d_1a's output.
  void build_rest(Act x) {
    x = conv("Conv2d_2a_3x3", x, 1, 0);
    x = conv("Conv2d_2b_3x3", x, 1, 1);
    x = pool(algorithm::pooling_max, x, 3, 2, 0);
    x = conv("Conv2d_3b_1x1", x, 1, 0);
    x = conv("Conv2d_4a_3x3", x, 1, 0);
    x = pool(algorithm::pooling_max, x, 3, 2, 0);
    for (const char* b : {"Mixed_5b", "Mixed_5c", "Mixed_5d"}) observe(b, x = block_a(b, x));
    observe("Mixed_6a", x = block_b("Mixed_6a", x));
    for (const char* b : {"Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e"}) observe(b, x = block_c(b, x));
    observe("Mixed_7a", x = block_d("Mixed_7a", x));
    observe("Mixed_7b", x = block_e("Mixed_7b", x, false));
    observe("Mixed_7c", x = block_e("Mixed_7c", x, wts_.arch == InceptionArch::tf2015));
    if (x.c != wts_.feature_dim)
      throw ReplicaError(wts_.source + ": the network ends with " + std::to_string(x.c) + " channels, expected " +
                         std::to_string(wts_.feature_dim));
    if (own_global_average(x)) return;
    if (int8()) {  // back to f32 (the average of 64 u8 values keeps more than 8 bits)
      act_dt_ = dt::f32;
      fmt_ = f32_fmt_;
      Act f = new_act(x.c, x.h, x.w);
      dnnl::primitive_attr attr;
      attr.set_output_scales(0, {x.scale});
      ops_.emplace_back(dnnl::reorder::primitive_desc(x.mem, f.mem, attr),
                        std::unordered_map<int, memory>{{DNNL_ARG_FROM, x.mem}, {DNNL_ARG_TO, f.mem}});
      x = f;
    }
    // Global average pool, then into the caller's [N, C] buffer.
    Act g = new_act(x.c, 1, 1);
    dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, algorithm::pooling_avg_include_padding,
                                  x.mem.get_desc(), g.mem.get_desc(), {1, 1}, {x.h, x.w}, {0, 0}, {0, 0});
    dnnl::pooling_forward::primitive_desc pd(d, eng_);
    ops_.emplace_back(pd, std::unordered_map<int, memory>{{DNNL_ARG_SRC, x.mem}, {DNNL_ARG_DST, g.mem}});
    out_user_ = memory({{n_, x.c, 1, 1}, dt::f32, tag::nchw}, eng_, DNNL_MEMORY_NONE);
    ops_.emplace_back(dnnl::reorder::primitive_desc(g.mem, out_user_),
                      std::unordered_map<int, memory>{{DNNL_ARG_FROM, g.mem}, {DNNL_ARG_TO, out_user_}});
  }
};

}  // namespace vecbench::onednn_detail
