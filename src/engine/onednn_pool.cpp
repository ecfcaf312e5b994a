// The pooling builder of the oneDNN engine (see onednn_pool.hpp).
#include "onednn_pool.hpp"

#include <cassert>

namespace vecbench::onednn_detail {

namespace {

/// The channels-last activation `m` (or slice of one) as the kernels see it: its shape, pixel
/// stride and first element (`offset`, in elements; its data pointer is set at run time, once
/// the arena is placed); false for any other layout.
bool channels_last(const memory& m, pool_kernels::Tensor& t, std::size_t& offset) {
  const dnnl_memory_desc_t& d = m.get_desc().data;
  const auto& b = d.format_desc.blocking;
  if (d.ndims != 4 || d.format_kind != dnnl_blocked || b.inner_nblks != 0 || b.strides[1] != 1 ||
      b.strides[3] < d.dims[1] || b.strides[2] != b.strides[3] * d.dims[3] || b.strides[0] != b.strides[2] * d.dims[2])
    return false;
  t.n = static_cast<int>(d.dims[0]), t.c = static_cast<int>(d.dims[1]);
  t.h = static_cast<int>(d.dims[2]), t.w = static_cast<int>(d.dims[3]);
  t.pixel_stride = b.strides[3];
  offset = static_cast<std::size_t>(d.offset0);
  return true;
}

/// Element `offset` of `m`'s data (u8 or bf16 elements).
void* element(const memory& m, std::size_t offset) {
  const std::size_t size = m.get_desc().data.data_type == dnnl_u8 ? 1 : 2;
  return static_cast<char*>(m.get_data_handle()) + offset * size;
}

dnnl::primitive_attr relu_attr() {
  dnnl::post_ops po;
  po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  return attr;
}

}  // namespace

bool PoolBuilder::pool_into(algorithm alg, const Act& x, const memory& dst, const PoolWindow& win, float dst_step,
                            bool relu) {
  const bool int8 = net_.int8();
  const float rescale = int8 && dst_step > 0.0f ? x.scale / dst_step : 1.0f;
  if (alg == algorithm::pooling_max && !relu && own_max_pool(x.mem, dst, win, rescale)) return true;
  if (int8 && dst_step > 0.0f && dst_step != x.scale) {
    Act t = pool(alg, x, win);
    dnnl::primitive_attr attr;
    attr.set_output_scales(0, {x.scale / dst_step});
    net_.add_reorder(t.mem, dst, attr);
    return true;
  }
  const dnnl::primitive_attr attr = relu ? relu_attr() : dnnl::primitive_attr();
  const ActType act = net_.act();
  for (const bool dense_dst : {false, true}) {
    memory::desc dst_md = dense_dst ? memory::desc(dst.get_desc().dims(), act.type, act.layout) : dst.get_desc();
    dnnl::pooling_forward::primitive_desc pd;
    try {
      dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, x.mem.get_desc(), dst_md,
                                    {win.stride, win.stride}, {win.k, win.k}, {win.pad, win.pad}, {win.pad, win.pad});
      pd = dnnl::pooling_forward::primitive_desc(d, attr, net_.engine());
    } catch (const dnnl::error&) {
      continue;
    }
    if (is_reference(pd.impl_info_str()) && (!dense_dst || relu)) continue;
    memory out = dense_dst ? net_.buffer(pd.dst_desc()) : dst;
    net_.add(pd, Args{{DNNL_ARG_SRC, x.mem}, {DNNL_ARG_DST, out}});
    if (dense_dst) net_.add_reorder(out, dst);
    return true;
  }
  if (relu) return false;
  throw ReplicaError(source_ + ": oneDNN has no pooling for a " + std::to_string(win.k) + "x" + std::to_string(win.k) +
                     " window");
}

Act PoolBuilder::pool(algorithm alg, const Act& x, const PoolWindow& win) {
  Act y = net_.new_act(x.c, out_dim(x.h, win.k, win.stride, win.pad), out_dim(x.w, win.k, win.stride, win.pad));
  y.scale = x.scale;  // int8: a pool's output is within its input's range
  pool_into(alg, x, y.mem, win);
  return y;
}

bool PoolBuilder::has_pool_relu(algorithm alg, const memory::desc& md) const {
  try {
    dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, md, md, {1, 1}, {3, 3}, {1, 1}, {1, 1});
    return !is_reference(dnnl::pooling_forward::primitive_desc(d, relu_attr(), net_.engine()).impl_info_str());
  } catch (const dnnl::error&) {
    return false;
  }
}

bool PoolBuilder::own_pooling() const {
  const bool runs = route_.own_pooling && net_.act().type != dt::f32;
  assert(!runs || net_.act().layout == tag::nhwc);  // the layout the route's own poolings count on
  return runs;
}

PoolBuilder::Avg3x3Layouts PoolBuilder::avg3x3_layouts(const std::string& what, const memory& t,
                                                       const memory& dst) const {
  Avg3x3Layouts l;
  if (!channels_last(t, l.t, l.t_off) || !channels_last(dst, l.dst, l.dst_off) ||
      !pool_kernels::fits(pool_type(), l.t, l.dst, 3, 1, 1))
    throw ReplicaError(source_ + ": " + what + ": the pool branch's layouts do not fit (onednn engine)");
  return l;
}

void PoolBuilder::check_avg3x3_relu(const std::string& what, const memory& t, const memory& dst) const {
  avg3x3_layouts(what, t, dst);
}

void PoolBuilder::avg3x3_relu_into(const std::string& what, const memory& t, const memory& dst, float inv_step) {
  const Avg3x3Layouts l = avg3x3_layouts(what, t, dst);
  pool_kernels::Tensor t_shape = l.t, dst_shape = l.dst;
  const std::size_t t_off = l.t_off, dst_off = l.dst_off;
  const auto type = pool_type();
  const int rows = t_shape.n * t_shape.h, threads = std::min(net_.threads(), rows);
  net_.add_own(
      [t, dst, t_shape, dst_shape, t_off, dst_off, type, inv_step, rows, threads]() mutable {
        t_shape.data = static_cast<float*>(t.get_data_handle()) + t_off;
        dst_shape.data = element(dst, dst_off);
        split_rows(threads, rows, [&](int first, int last) {  // cannot throw: fits() was checked above
          pool_kernels::avg3x3_relu(t_shape, type, inv_step, dst_shape, first, last);
        });
      },
      Args{{DNNL_ARG_SRC, t}, {DNNL_ARG_DST, dst}});
  ++g_own_poolings;
}

/// A k x k max pool of `src` into `dst` (u8: each maximum times `rescale`, dst's step) by
/// vecbench's kernel; false where own_pooling() is off. A layout the kernel does not take is a
/// ReplicaError then (the fingerprint says the kernels ran: no silent fallback to oneDNN's).
bool PoolBuilder::own_max_pool(const memory& src, const memory& dst, const PoolWindow& win, float rescale) {
  if (!own_pooling()) return false;
  pool_kernels::Tensor s, d;
  std::size_t s_off = 0, d_off = 0;
  const auto type = pool_type();
  const int k = win.k, stride = win.stride, pad = win.pad;
  if (src.get_desc().data.data_type != dst.get_desc().data.data_type || !channels_last(src, s, s_off) ||
      !channels_last(dst, d, d_off) || !pool_kernels::fits(type, s, d, k, stride, pad))
    throw ReplicaError(source_ + ": a " + std::to_string(k) + "x" + std::to_string(k) +
                       " max pool's layouts do not fit vecbench's pooling kernel (onednn engine)");
  const int rows = s.n * d.h, threads = std::min(net_.threads(), rows);
  net_.add_own(
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

bool PoolBuilder::own_global_average(const Act& x, const memory& out) {
  pool_kernels::Tensor s;
  std::size_t off = 0;
  if (!own_pooling()) return false;
  if (!channels_last(x.mem, s, off) || s.c % 16 != 0)
    throw ReplicaError(source_ + ": the last pool's layout does not fit vecbench's pooling kernel (onednn engine)");
  const memory src = x.mem;
  const auto type = pool_type();
  const float scale = net_.int8() ? x.scale : 1.0f;
  const int threads = std::min(net_.threads(), s.n);
  net_.add_own(
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

}  // namespace vecbench::onednn_detail
