// The poolings of a oneDNN network (private to src/engine/): oneDNN's, or the engine's own
// kernels (engine/pool_kernels.hpp) where the CPU route says so; the Mixed blocks' pool
// branch in the order that costs least.
#pragma once
#include <cassert>
#include <string>

#include "onednn_conv.hpp"
#include "vecbench/engine/pool_kernels.hpp"

namespace vecbench::onednn_detail {

class PoolLayers : public ConvLayers {
 protected:
  using ConvLayers::ConvLayers;

  /// int8: `dst_scale` (0: x's) is dst's u8 step; where it is not x's, the pool writes a buffer
  /// of x's steps that a reorder rescales into dst.
  /// `relu`: with a ReLU post-op (pool_branch); false returned where oneDNN has no such pooling
  /// (nothing added then), true otherwise.
  bool pool_into(algorithm alg, const Act& x, const memory& dst, int k, int stride, int pad, float dst_scale = 0.0f,
                 bool relu = false) {
    const float rescale = int8() && dst_scale > 0.0f ? x.scale / dst_scale : 1.0f;
    if (alg == algorithm::pooling_max && !relu && own_max_pool(x.mem, dst, k, stride, pad, rescale)) return true;
    if (int8() && dst_scale > 0.0f && dst_scale != x.scale) {
      Act t = pool(alg, x, k, stride, pad);
      dnnl::primitive_attr attr;
      attr.set_output_scales(0, {x.scale / dst_scale});
      ops_.emplace_back(dnnl::reorder::primitive_desc(t.mem, dst, attr),
                        std::unordered_map<int, memory>{{DNNL_ARG_FROM, t.mem}, {DNNL_ARG_TO, dst}});
      return true;
    }
    dnnl::primitive_attr attr;
    if (relu) {
      dnnl::post_ops po;
      po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(po);
    }
    for (const bool dense_dst : {false, true}) {
      memory::desc dst_md = dense_dst ? memory::desc(dst.get_desc().dims(), act_dt_, fmt_) : dst.get_desc();
      dnnl::pooling_forward::primitive_desc pd;
      try {
        dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, x.mem.get_desc(), dst_md,
                                      {stride, stride}, {k, k}, {pad, pad}, {pad, pad});
        pd = dnnl::pooling_forward::primitive_desc(d, attr, eng_);
      } catch (const dnnl::error&) {
        continue;
      }
      if (is_reference(pd.impl_info_str()) && (!dense_dst || relu)) continue;
      memory out = dense_dst ? arena_.add(pd.dst_desc(), eng_) : dst;
      ops_.emplace_back(pd, std::unordered_map<int, memory>{{DNNL_ARG_SRC, x.mem}, {DNNL_ARG_DST, out}});
      if (dense_dst)
        ops_.emplace_back(dnnl::reorder::primitive_desc(out, dst),
                          std::unordered_map<int, memory>{{DNNL_ARG_FROM, out}, {DNNL_ARG_TO, dst}});
      return true;
    }
    if (relu) return false;
    throw ReplicaError(wts_.source + ": oneDNN has no pooling for a " + std::to_string(k) + "x" + std::to_string(k) +
                       " window");
  }
  Act pool(algorithm alg, const Act& x, int k, int stride, int pad) {
    Act y = new_act(x.c, out_dim(x.h, k, stride, pad), out_dim(x.w, k, stride, pad));
    y.scale = x.scale;  // int8: a pool's output is within its input's range
    pool_into(alg, x, y.mem, k, stride, pad);
    return y;
  }

  /// pool_branch where own_pooling(): the 1x1 layer into f32 (int8: its real values, s_out 1),
  /// then vecbench's kernel averages, applies the ReLU and quantizes into the slice.
  void own_pool_branch(Concat& cat, const std::string& name, const Act& x) {
    const auto& l = layer(name, x.c);
    const int oc = static_cast<int>(l.shape[0]);
    pool_kernels::Tensor t_shape, dst_shape;
    if (l.shape[2] != 1 || l.shape[3] != 1 || oc % 16 != 0)
      throw ReplicaError(wts_.source + ": " + name +
                         " is not a 1x1 layer of a multiple of 16 channels (onednn engine)");
    // the layer into f32 (int8: its real values, s_out 1), the kernel into the slice
    memory t = arena_.add(memory::desc({n_, oc, x.h, x.w}, dt::f32, tag::nhwc), eng_);
    memory dst = slice(cat, oc);
    std::size_t t_off = 0, dst_off = 0;
    if (!channels_last(t, t_shape, t_off) || !channels_last(dst, dst_shape, dst_off) ||
        !pool_kernels::fits(pool_type(), t_shape, dst_shape, 3, 1, 1))
      throw ReplicaError(wts_.source + ": " + name + ": the pool branch's layouts do not fit (onednn engine)");
    conv_into(name, l, x.mem, t, 1, 0, 0, x.scale, 1.0f, false);
    const auto type = pool_type();
    const float inv_scale = int8() ? 1.0f / cat.out.scale : 1.0f;
    const int rows = n_ * x.h, threads = std::min(threads_, rows);
    ops_.emplace_back(
        [t, dst, t_shape, dst_shape, t_off, dst_off, type, inv_scale, rows, threads]() mutable {
          t_shape.data = static_cast<float*>(t.get_data_handle()) + t_off;
          dst_shape.data = element(dst, dst_off);
          split_rows(threads, rows, [&](int first, int last) {  // cannot throw: fits() was checked above
            pool_kernels::avg3x3_relu(t_shape, type, inv_scale, dst_shape, first, last);
          });
        },
        Args{{DNNL_ARG_SRC, t}, {DNNL_ARG_DST, dst}});
    ++g_own_poolings;
  }

  /// The pool branch of a Mixed block: a 3x3 average pool and the 1x1 layer `name`, into the
  /// next slice of `cat`. Where the pool averages over the valid window only (tf2015) the two
  /// commute, bias included (each window's weights sum to 1): the 1x1 layer runs first, on the
  /// block's input, and the pool then averages its 4-7x fewer channels, with the ReLU as its
  /// post-op (where oneDNN has that pooling: has_pool_relu). fp32, and bf16 on AMX (whose
  /// fingerprint is its own; bf16 on AVX-512 keeps the vectors of its folders). int8 and bf16
  /// where own_pooling(): the layer into f32 (int8: its real values), then vecbench's kernel
  /// averages, applies the ReLU and quantizes straight into the slice (one rounding; oneDNN's
  /// poolings write no slice of channels-last u8 or bf16, so that cost a copy too). Elsewhere
  /// int8 (its u8 steps), calibration and the torchvision layout keep the pool first.
  void pool_branch(Concat& cat, const std::string& name, const Act& x) {
    const bool tf2015 = wts_.arch == InceptionArch::tf2015;
    if (own_pooling() && !opt_.observe && tf2015) return own_pool_branch(cat, name, x);
    if ((act_dt_ == dt::f32 || (act_dt_ == dt::bf16 && route_.amx)) && !opt_.observe && tf2015) {
      const auto& l = layer(name, x.c);
      const int oc = static_cast<int>(l.shape[0]);
      if (l.shape[2] == 1 && l.shape[3] == 1 && has_pool_relu(act_desc(oc, x.h, x.w))) {
        Act t = new_act(oc, x.h, x.w);
        conv_into(name, l, x.mem, t.mem, 1, 0, 0, 1.0f, 1.0f, false);
        if (!pool_into(avg_alg(), t, slice(cat, t.c), 3, 1, 1, 0.0f, true))
          throw ReplicaError(wts_.source + ": " + name + ": oneDNN refused the pooling with a ReLU it offered");
        return;
      }
    }
    conv_to(cat, name, pool(avg_alg(), x, 3, 1, 1));
  }

  /// Whether oneDNN has a pooling (not its reference code) for the pool branch's 3x3 stride-1
  /// average pool of `md` with a ReLU post-op: asked before pool_branch builds anything for
  /// that order (a dense destination: pool_into falls back to one where the slice has none).
  bool has_pool_relu(const memory::desc& md) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    try {
      dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, avg_alg(), md, md, {1, 1}, {3, 3}, {1, 1},
                                    {1, 1});
      return !is_reference(dnnl::pooling_forward::primitive_desc(d, attr, eng_).impl_info_str());
    } catch (const dnnl::error&) {
      return false;
    }
  }

  /// Average pool of the Mixed blocks' pool branch: over the valid window (tf2015) or
  /// counting the zero padding (torchvision).
  algorithm avg_alg() const {
    return wts_.arch == InceptionArch::tf2015 ? algorithm::pooling_avg_exclude_padding
                                              : algorithm::pooling_avg_include_padding;
  }

  /// Whether this network's poolings run vecbench's kernels (engine/pool_kernels.hpp): int8 and
  /// bf16 on channels-last activations where the route says so for this CPU.
  bool own_pooling() const {
    const bool runs = route_.own_pooling && act_dt_ != dt::f32;
    assert(!runs || fmt_ == tag::nhwc);  // the layout the route's own poolings count on
    return runs;
  }
  pool_kernels::Type pool_type() const { return int8() ? pool_kernels::Type::u8 : pool_kernels::Type::bf16; }
  /// The channels-last activation `m` (or slice of one) as the kernels see it: its shape, pixel
  /// stride and first element (`offset`, in elements; its data pointer is set at run time, once
  /// the arena is placed); false for any other layout.
  static bool channels_last(const memory& m, pool_kernels::Tensor& t, std::size_t& offset) {
    const dnnl_memory_desc_t& d = m.get_desc().data;
    const auto& b = d.format_desc.blocking;
    if (d.ndims != 4 || d.format_kind != dnnl_blocked || b.inner_nblks != 0 || b.strides[1] != 1 ||
        b.strides[3] < d.dims[1] || b.strides[2] != b.strides[3] * d.dims[3] ||
        b.strides[0] != b.strides[2] * d.dims[2])
      return false;
    t.n = static_cast<int>(d.dims[0]), t.c = static_cast<int>(d.dims[1]);
    t.h = static_cast<int>(d.dims[2]), t.w = static_cast<int>(d.dims[3]);
    t.pixel_stride = b.strides[3];
    offset = static_cast<std::size_t>(d.offset0);
    return true;
  }
  /// Element `offset` of `m`'s data (u8 or bf16 elements).
  static void* element(const memory& m, std::size_t offset) {
    const std::size_t size = m.get_desc().data.data_type == dnnl_u8 ? 1 : 2;
    return static_cast<char*>(m.get_data_handle()) + offset * size;
  }
  /// A k x k max pool of `src` into `dst` (u8: each maximum times `rescale`, dst's step) by
  /// vecbench's kernel; false where own_pooling() is off. A layout the kernel does not take is a
  /// ReplicaError then (the fingerprint says the kernels ran: no silent fallback to oneDNN's).
  bool own_max_pool(const memory& src, const memory& dst, int k, int stride, int pad, float rescale) {
    if (!own_pooling()) return false;
    pool_kernels::Tensor s, d;
    std::size_t s_off = 0, d_off = 0;
    const auto type = pool_type();
    if (src.get_desc().data.data_type != dst.get_desc().data.data_type || !channels_last(src, s, s_off) ||
        !channels_last(dst, d, d_off) || !pool_kernels::fits(type, s, d, k, stride, pad))
      throw ReplicaError(wts_.source + ": a " + std::to_string(k) + "x" + std::to_string(k) +
                         " max pool's layouts do not fit vecbench's pooling kernel (onednn engine)");
    const int rows = s.n * d.h, threads = std::min(threads_, rows);
    ops_.emplace_back(
        [src, dst, s, d, s_off, d_off, type, k, stride, pad, rescale, rows, threads]() mutable {
          s.data = element(src, s_off);
          d.data = element(dst, d_off);
          split_rows(threads, rows, [&](int first, int last) {  // cannot throw: fits() was checked above
            pool_kernels::max_pool(type, s, d, k, stride, pad, rescale, first, last);
          });
        },
        Args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    ++g_own_poolings;
    return true;
  }

  /// The global average pool of u8 or bf16 `x` straight into the caller's floats by vecbench's
  /// kernel (int8: exact sums times x's step); false where own_pooling() is off (a layout it does
  /// not take is a ReplicaError then, as in own_max_pool).
  bool own_global_average(const Act& x) {
    pool_kernels::Tensor s;
    std::size_t off = 0;
    if (!own_pooling()) return false;
    if (!channels_last(x.mem, s, off) || s.c % 16 != 0)
      throw ReplicaError(wts_.source +
                         ": the last pool's layout does not fit vecbench's pooling kernel (onednn engine)");
    out_user_ = memory({{n_, x.c, 1, 1}, dt::f32, tag::nchw}, eng_, DNNL_MEMORY_NONE);
    const memory src = x.mem, out = out_user_;
    const auto type = pool_type();
    const float scale = int8() ? x.scale : 1.0f;
    const int threads = std::min(threads_, n_);
    ops_.emplace_back(
        [src, out, s, off, type, scale, threads]() mutable {
          s.data = element(src, off);
          auto* dst = static_cast<float*>(out.get_data_handle());
          split_rows(threads, s.n, [&](int first, int last) {
            pool_kernels::global_avg(type, s, scale, dst, first, last);  // checked above
          });
        },
        Args{{DNNL_ARG_SRC, x.mem}});
    ++g_own_poolings;
    return true;
  }
};

}  // namespace vecbench::onednn_detail
