// Inception-v3 as a oneDNN network (see onednn_topology.hpp).
#include "onednn_topology.hpp"

#include <array>
#include <cassert>

namespace vecbench::onednn_detail {

namespace {

dt act_type_of(Precision p) { return p == Precision::bf16 ? dt::bf16 : p == Precision::int8 ? dt::u8 : dt::f32; }

}  // namespace

// The layouts and kernels of this CPU's route (engine/cpu_route.hpp): one blocked layout for every
// f32 activation (16 channels per block on AVX-512, 8 on AVX2); channels-last for int8 and for
// bf16 on AMX. The engine's own Winograd (engine/winograd.hpp) on every 3x3, 5x5, 1x7, 7x1, 1x3
// and 3x1 stride-1 layer: oneDNN 2.x has none in its AVX2 code and none but 3x3, and on AVX-512
// its 3x3 one takes fewer layers and runs slower (results/kernels/winograd-avx512-20261203.md);
// layers these kernels don't fit run oneDNN's direct code.
InceptionNetwork::InceptionNetwork(const InceptionWeights& wts, const OneDnnOptions& opt, const dnnl::engine& eng,
                                   int n, int threads, int share, int shares)
    : wts_(wts),
      opt_(opt),
      route_(cpu_route(opt.precision, opt.own_first_layer, opt.own_pooling, opt.winograd)),
      f32_{dt::f32, format_of(route_.f32_layout)},
      net_(eng, n, threads, ActType{act_type_of(opt.precision), format_of(route_.layout)}),
      points_(opt, wts.source),
      convs_(net_, *wts.packed, route_, wts.source),
      pools_(net_, route_, wts.source) {
  if (net_.int8() && !opt.int8_ranges)
    throw ReplicaError(wts_.source + ": the int8 route needs a calibration (onednn engine)");
  build();
  net_.finish(share, shares);
}

const FoldedConv& InceptionNetwork::find_layer(const std::string& name) const {
  auto it = wts_.convs.find(name);
  if (it == wts_.convs.end()) throw ReplicaError(wts_.source + ": layer " + name + " is missing (onednn engine)");
  return it->second;
}

const FoldedConv& InceptionNetwork::layer(const std::string& name, int in_c) const {
  const auto& l = find_layer(name);
  if (l.shape[1] != in_c)
    throw ReplicaError(wts_.source + ": layer " + name + " expects " + std::to_string(l.shape[1]) +
                       " input channels, the network gives it " + std::to_string(in_c));
  return l;
}

Act InceptionNetwork::conv(const std::string& name, const Act& x, int stride, int pad) {
  const auto& l = layer(name, x.c);
  const int kh = static_cast<int>(l.shape[2]), kw = static_cast<int>(l.shape[3]);
  const int ph = pad >= 0 ? pad : kh / 2, pw = pad >= 0 ? pad : kw / 2;
  Act y = new_point(name, static_cast<int>(l.shape[0]), out_dim(x.h, kh, stride, ph), out_dim(x.w, kw, stride, pw));
  convs_.conv_into(name, l, x.mem, y.mem, ConvGeometry{stride, ph, pw, x.scale, y.scale});
  points_.observe(net_, name, y);
  return y;
}

void InceptionNetwork::conv_to(Concat& cat, const std::string& name, const Act& x, int stride, int pad) {
  const auto& l = layer(name, x.c);
  const int kh = static_cast<int>(l.shape[2]), kw = static_cast<int>(l.shape[3]);
  const int ph = pad >= 0 ? pad : kh / 2, pw = pad >= 0 ? pad : kw / 2;
  if (out_dim(x.h, kh, stride, ph) != cat.out.h || out_dim(x.w, kw, stride, pw) != cat.out.w)
    throw ReplicaError(wts_.source + ": layer " + name + " does not fit its block (onednn engine)");
  convs_.conv_into(name, l, x.mem, net_.slice(cat, static_cast<int>(l.shape[0])),
                   ConvGeometry{stride, ph, pw, x.scale, cat.out.scale});
}

algorithm InceptionNetwork::avg_alg() const {
  return wts_.arch == InceptionArch::tf2015 ? algorithm::pooling_avg_exclude_padding
                                            : algorithm::pooling_avg_include_padding;
}

/// pool_branch where the pools are vecbench's own: the 1x1 layer into f32 (int8: its real values,
/// step 1), then vecbench's kernel averages, applies the ReLU and quantizes into the slice.
void InceptionNetwork::own_pool_branch(Concat& cat, const std::string& name, const Act& x) {
  const auto& l = layer(name, x.c);
  const int oc = static_cast<int>(l.shape[0]);
  if (l.shape[2] != 1 || l.shape[3] != 1 || oc % 16 != 0)
    throw ReplicaError(wts_.source + ": " + name + " is not a 1x1 layer of a multiple of 16 channels (onednn engine)");
  memory t = net_.buffer(memory::desc({net_.batch(), oc, x.h, x.w}, dt::f32, tag::nhwc));
  memory dst = net_.slice(cat, oc);
  pools_.check_avg3x3_relu(name, t, dst);  // before the layer: nothing packed for a branch that cannot run
  convs_.conv_into(name, l, x.mem, t, ConvGeometry{1, 0, 0, x.scale, 1.0f, false});
  pools_.avg3x3_relu_into(name, t, dst, net_.int8() ? 1.0f / cat.out.scale : 1.0f);
}

/// The pool branch of a Mixed block: a 3x3 average pool and the 1x1 layer `name`, into the next
/// slice of `cat`. Where the pool averages over the valid window only (tf2015) the two commute,
/// bias included (each window's weights sum to 1): the 1x1 layer runs first, on the block's input,
/// and the pool then averages its 4-7x fewer channels, with the ReLU as its post-op (where oneDNN
/// has that pooling: has_pool_relu). fp32, and bf16 on AMX (whose fingerprint is its own; bf16 on
/// AVX-512 keeps the vectors of its folders). int8 and bf16 where the pools are vecbench's own:
/// the layer into f32 (int8: its real values), then vecbench's kernel averages, applies the ReLU
/// and quantizes straight into the slice (one rounding; oneDNN's poolings write no slice of
/// channels-last u8 or bf16, so that cost a copy too). Elsewhere int8 (its u8 steps), calibration
/// and the torchvision layout keep the pool first.
void InceptionNetwork::pool_branch(Concat& cat, const std::string& name, const Act& x) {
  const bool tf2015 = wts_.arch == InceptionArch::tf2015;
  const dt type = net_.act().type;
  if (pools_.own_pooling() && !points_.observing() && tf2015) return own_pool_branch(cat, name, x);
  if ((type == dt::f32 || (type == dt::bf16 && route_.amx)) && !points_.observing() && tf2015) {
    const auto& l = layer(name, x.c);
    const int oc = static_cast<int>(l.shape[0]);
    if (l.shape[2] == 1 && l.shape[3] == 1 && pools_.has_pool_relu(avg_alg(), net_.act_desc(oc, x.h, x.w))) {
      Act t = net_.new_act(oc, x.h, x.w);
      convs_.conv_into(name, l, x.mem, t.mem, ConvGeometry{1, 0, 0, 1.0f, 1.0f, false});
      if (!pools_.pool_into(avg_alg(), t, net_.slice(cat, t.c), PoolWindow{3, 1, 1}, 0.0f, true))
        throw ReplicaError(wts_.source + ": " + name + ": oneDNN refused the pooling with a ReLU it offered");
      return;
    }
  }
  conv_to(cat, name, pools_.pool(avg_alg(), x, PoolWindow{3, 1, 1}));
}

Act InceptionNetwork::block_a(const std::string& b, const Act& x) {  // Mixed_5b..5d
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

Act InceptionNetwork::block_b(const std::string& b, const Act& x) {  // Mixed_6a
  const int h = out_dim(x.h, 3, 2, 0), w = out_dim(x.w, 3, 2, 0);
  Concat cat{new_point(b, out_channels(b + ".branch3x3") + out_channels(b + ".branch3x3dbl_3") + x.c, h, w)};
  conv_to(cat, b + ".branch3x3", x, 2, 0);
  conv_to(cat, b + ".branch3x3dbl_3", conv(b + ".branch3x3dbl_2", conv(b + ".branch3x3dbl_1", x)), 2, 0);
  pools_.pool_into(algorithm::pooling_max, x, net_.slice(cat, x.c), PoolWindow{3, 2, 0}, cat.out.scale);
  return cat.out;
}

Act InceptionNetwork::block_c(const std::string& b, const Act& x) {  // Mixed_6b..6e
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

Act InceptionNetwork::block_d(const std::string& b, const Act& x) {  // Mixed_7a
  const int h = out_dim(x.h, 3, 2, 0), w = out_dim(x.w, 3, 2, 0);
  Concat cat{new_point(b, out_channels(b + ".branch3x3_2") + out_channels(b + ".branch7x7x3_4") + x.c, h, w)};
  conv_to(cat, b + ".branch3x3_2", conv(b + ".branch3x3_1", x), 2, 0);
  Act t = conv(b + ".branch7x7x3_1", x);
  t = conv(b + ".branch7x7x3_3", conv(b + ".branch7x7x3_2", t));
  conv_to(cat, b + ".branch7x7x3_4", t, 2, 0);
  pools_.pool_into(algorithm::pooling_max, x, net_.slice(cat, x.c), PoolWindow{3, 2, 0}, cat.out.scale);
  return cat.out;
}

Act InceptionNetwork::block_e(const std::string& b, const Act& x, bool max_pool_branch) {  // Mixed_7b, 7c
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
    conv_to(cat, b + ".branch_pool", pools_.pool(algorithm::pooling_max, x, PoolWindow{3, 1, 1}));
  else
    pool_branch(cat, b + ".branch_pool", x);
  return cat.out;
}

void InceptionNetwork::build() {
  const int s = wts_.input_size, n = net_.batch();
  in_ = net_.input(memory::desc({n, 3, s, s}, dt::f32, tag::nchw));
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
  const ActType act = net_.act();
  net_.set_act(f32_);
  Act y = net_.new_act(static_cast<int>(l1.shape[0]), out_dim(s, 3, 2, 0), out_dim(s, 3, 2, 0));
  convs_.conv_into("Conv2d_1a_3x3", first_, in_, y.mem, ConvGeometry{2, 0, 0});
  points_.observe(net_, "Conv2d_1a_3x3", y);
  net_.set_act(act);
  Act x = y;
  if (act.type != dt::f32) {  // bf16 or u8 from here on
    x = new_point("Conv2d_1a_3x3", y.c, y.h, y.w);
    dnnl::primitive_attr attr;
    if (net_.int8()) attr.set_output_scales(0, {1.0f / x.scale});
    net_.add_reorder(y.mem, x.mem, attr);
  }
  build_rest(x);
}

/// Whether Conv2d_1a runs vecbench's kernel (engine/first_conv.hpp) from the caller's floats
/// straight into u8 or bf16 channels-last: where the route says so for this CPU (the output
/// fingerprint reads it too) and the layer has its shape; else oneDNN's f32 convolution and a
/// reorder (also with OneDnnOptions::own_first_layer off).
bool InceptionNetwork::own_first_layer_runs() const {
  const std::array<int64_t, 4> shape{first_conv::kOutChannels, 3, 3, 3};
  const bool runs = route_.own_first_layer && first_.shape == shape && first_conv::out_dim(wts_.input_size) >= 8;
  assert(!runs || net_.act().layout == tag::nhwc);  // the layout the route's own first layer counts on
  return runs;
}

/// Conv2d_1a by that kernel into `x` (Conv2d_1a's quantization point).
void InceptionNetwork::own_first_layer(const Act& x) {
  const auto kind = net_.int8() ? first_conv::Output::u8 : first_conv::Output::bf16;
  const int s = wts_.input_size;
  auto f =
      std::make_shared<const first_conv::Filter>(first_conv::make_filter(first_.weight.data(), first_.bias.data()));
  const float inv_scale = net_.int8() ? 1.0f / x.scale : 1.0f;
  const int rows = net_.batch() * x.h, threads = std::min(net_.threads(), rows);
  memory in = in_, out = x.mem;
  net_.add_own(
      [f, in, out, s, kind, inv_scale, rows, threads]() {
        const auto* src = static_cast<const float*>(in.get_data_handle());
        void* dst = out.get_data_handle();
        split_rows(threads, rows, [&](int first, int last) {
          // cannot throw here: own_first_layer_runs() checked what run() checks
          first_conv::run(*f, src, s, s, kind, inv_scale, dst, first, last);
        });
      },
      Args{{DNNL_ARG_SRC, in_}, {DNNL_ARG_DST, x.mem}});
  ++g_own_first_layers;
}

/// The network from Conv2d_2a on, `x` being Conv2d_1a's output.
void InceptionNetwork::build_rest(Act x) {
  x = conv("Conv2d_2a_3x3", x, 1, 0);
  x = conv("Conv2d_2b_3x3", x, 1, 1);
  x = pools_.pool(algorithm::pooling_max, x, PoolWindow{3, 2, 0});
  x = conv("Conv2d_3b_1x1", x, 1, 0);
  x = conv("Conv2d_4a_3x3", x, 1, 0);
  x = pools_.pool(algorithm::pooling_max, x, PoolWindow{3, 2, 0});
  for (const char* b : {"Mixed_5b", "Mixed_5c", "Mixed_5d"}) points_.observe(net_, b, x = block_a(b, x));
  points_.observe(net_, "Mixed_6a", x = block_b("Mixed_6a", x));
  for (const char* b : {"Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e"}) points_.observe(net_, b, x = block_c(b, x));
  points_.observe(net_, "Mixed_7a", x = block_d("Mixed_7a", x));
  points_.observe(net_, "Mixed_7b", x = block_e("Mixed_7b", x, false));
  points_.observe(net_, "Mixed_7c", x = block_e("Mixed_7c", x, wts_.arch == InceptionArch::tf2015));
  if (x.c != wts_.feature_dim)
    throw ReplicaError(wts_.source + ": the network ends with " + std::to_string(x.c) + " channels, expected " +
                       std::to_string(wts_.feature_dim));
  // Global average pool into the caller's [N, C] floats.
  const memory out = net_.output(memory::desc({net_.batch(), x.c, 1, 1}, dt::f32, tag::nchw));
  if (pools_.own_global_average(x, out)) return;
  if (net_.int8()) {  // back to f32 (the average of 64 u8 values keeps more than 8 bits)
    net_.set_act(f32_);
    Act f = net_.new_act(x.c, x.h, x.w);
    dnnl::primitive_attr attr;
    attr.set_output_scales(0, {x.scale});
    net_.add_reorder(x.mem, f.mem, attr);
    x = f;
  }
  Act g = net_.new_act(x.c, 1, 1);
  dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, algorithm::pooling_avg_include_padding,
                                x.mem.get_desc(), g.mem.get_desc(), {1, 1}, {x.h, x.w}, {0, 0}, {0, 0});
  net_.add(dnnl::pooling_forward::primitive_desc(d, net_.engine()), Args{{DNNL_ARG_SRC, x.mem}, {DNNL_ARG_DST, g.mem}});
  net_.add_reorder(g.mem, out);
}

}  // namespace vecbench::onednn_detail
