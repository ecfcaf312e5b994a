// The convolution builder of the oneDNN engine (see onednn_conv.hpp).
#include "onednn_conv.hpp"

#include <cstring>
#include <vector>

#include "onednn_packed.hpp"
#include "vecbench/engine/winograd.hpp"

namespace vecbench::onednn_detail {

namespace {

/// Where `m` (a `block`-channel blocked f32 activation, or a slice of one) keeps element
/// (n, c, y, x); false for any other layout.
bool blocked(const memory& m, int block, winograd::BlockedTensor& t) {
  const dnnl_memory_desc_t& d = m.get_desc().data;
  const auto& b = d.format_desc.blocking;
  if (d.ndims != 4 || d.data_type != dnnl_f32 || d.format_kind != dnnl_blocked || b.inner_nblks != 1 ||
      b.inner_blks[0] != block || b.inner_idxs[0] != 1 || b.strides[3] != block)
    return false;
  t.offset = d.offset0;
  t.stride_n = b.strides[0], t.stride_cb = b.strides[1], t.stride_y = b.strides[2], t.stride_x = b.strides[3];
  return true;
}

}  // namespace

void ConvBuilder::conv_into(const std::string& name, const FoldedConv& l, const memory& src, const memory& dst,
                            const ConvGeometry& g) {
  const int oc = static_cast<int>(l.shape[0]), ic = static_cast<int>(l.shape[1]);
  const int kh = static_cast<int>(l.shape[2]), kw = static_cast<int>(l.shape[3]);
  const ActType act = net_.act();
  const bool int8 = net_.int8();
  if (act.type == dt::f32 && g.stride == 1 && g.relu)
    if (const auto w = route_.winograd_for(kh, kw, g.pad_h, g.pad_w);
        w && winograd_into(name, l, src, dst, w->kernel, w->pad))
      return;
  memory::desc w_any({oc, ic, kh, kw}, int8 ? dt::s8 : act.type, tag::any);  // bf16: packed (and rounded) once, here
  memory::desc b_md({oc}, dt::f32, tag::x);
  dnnl::post_ops po;
  if (g.relu) po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  // int8: s8 weights with one scale per output channel (largest |w| -> 127); the s32 sums plus
  // the bias (in their units) times in_step * s_w / out_step give dst's u8 steps, after the ReLU.
  const float* bias_data = l.bias.data();
  std::vector<float> inv_w_scale;
  if (int8) {
    const std::size_t per = static_cast<std::size_t>(ic) * kh * kw;
    std::vector<float> oscale(static_cast<std::size_t>(oc));
    std::vector<float>& qbias = net_.keep(static_cast<std::size_t>(oc));
    inv_w_scale.resize(static_cast<std::size_t>(oc));
    for (std::size_t o = 0; o < static_cast<std::size_t>(oc); ++o) {
      const float hi = abs_max(l.weight.data() + o * per, per);
      const float sw = hi > 0 ? hi / 127.0f : 1.0f;
      inv_w_scale[o] = 1.0f / sw;
      oscale[o] = g.in_step * sw / g.out_step;
      qbias[o] = l.bias[o] / (g.in_step * sw);
    }
    attr.set_output_scales(2, oscale);  // per output channel: dim 1 of dst
    bias_data = qbias.data();
  }
  for (const bool dense_dst : {false, true}) {
    // A slice of a concatenation is not dense; where no implementation writes into one, the
    // layer writes a dense buffer and a reorder copies it into the slice.
    memory::desc dst_md =
        dense_dst ? memory::desc(dst.get_desc().dims(), dst.get_desc().data_type(), act.layout) : dst.get_desc();
    dnnl::convolution_forward::primitive_desc pd;
    try {
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algorithm::convolution_direct,
                                        src.get_desc(), w_any, b_md, dst_md, {g.stride, g.stride}, {g.pad_h, g.pad_w},
                                        {g.pad_h, g.pad_w});
      pd = dnnl::convolution_forward::primitive_desc(d, attr, net_.engine());
    } catch (const dnnl::error&) {
      continue;
    }
    // oneDNN's reference code accepts everything at ~1% of the speed: only as a last resort
    if (is_reference(pd.impl_info_str()) && !dense_dst) continue;
    if (std::strstr(pd.impl_info_str(), "amx")) ++g_amx_convs;
    memory packed_w = shared_weights(packed_, name, l, pd.weights_desc(), net_.engine(), int8 ? &inv_w_scale : nullptr);
    memory bias(pd.bias_desc(), net_.engine(),
                const_cast<float*>(bias_data));  // f32, dense: the layer's own (int8: scaled)
    memory out = dense_dst ? net_.buffer(pd.dst_desc()) : dst;
    net_.add(pd, Args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, packed_w}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, out}});
    if (dense_dst) net_.add_reorder(out, dst);
    return;
  }
  throw ReplicaError(source_ + ": layer " + name + ": oneDNN has no convolution for it");
}

/// conv+bias+ReLU of a 3x3, 5x5, 1x7, 7x1, 1x3 or 3x1 stride-1 layer with the engine's Winograd
/// kernels (AVX2 or AVX-512); false where the kernels or the layouts don't fit (oneDNN runs it).
bool ConvBuilder::winograd_into(const std::string& name, const FoldedConv& l, const memory& src, const memory& dst,
                                winograd::Kernel kernel, int pad) {
  winograd::BlockedTensor in, out;
  const auto dims = src.get_desc().dims();
  winograd::ConvShape shape{net_.batch(),
                            static_cast<int>(l.shape[1]),
                            static_cast<int>(l.shape[0]),
                            static_cast<int>(dims[2]),
                            static_cast<int>(dims[3]),
                            pad,
                            route_.block,
                            kernel};
  if (!winograd::supports(shape) || !blocked(src, route_.block, in) || !blocked(dst, route_.block, out)) return false;
  const auto f = shared_winograd_filter(packed_, name, l, shape);
  const auto scratch = net_.scratch(winograd::scratch_floats(shape));
  const int groups = winograd::channel_groups(shape, net_.threads());
  const int units = winograd::block_count(shape) * groups, threads = std::min(net_.threads(), units);
  net_.add_own(
      [f, shape, in, out, src, dst, groups, units, threads, scratch]() mutable {
        in.data = static_cast<float*>(src.get_data_handle());
        out.data = static_cast<float*>(dst.get_data_handle());
#pragma omp parallel num_threads(threads)
        {
          const int t = omp_get_thread_num(), nt = omp_get_num_threads();
          winograd::run_units(*f, shape, in, out, groups, units * t / nt, units * (t + 1) / nt, scratch->of_thread(t));
        }
      },
      Args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  return true;
}

}  // namespace vecbench::onednn_detail
