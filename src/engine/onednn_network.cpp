// The network builder of the oneDNN engine and a network's quantization points (see
// onednn_network.hpp).
#include "onednn_network.hpp"

#include <algorithm>
#include <cassert>

namespace vecbench::onednn_detail {

tag format_of(ActivationLayout l) {
  return l == ActivationLayout::channels_last ? tag::nhwc
         : l == ActivationLayout::blocked16   ? tag::nChw16c
                                              : tag::nChw8c;
}

NetworkBuilder::NetworkBuilder(const dnnl::engine& eng, int batch, int threads, ActType act)
    : eng_(eng), n_(batch), threads_(std::max(1, threads)), act_(act) {}

memory NetworkBuilder::slice(Concat& cat, int c) {
  auto md = cat.out.mem.get_desc().submemory_desc({n_, c, cat.out.h, cat.out.w}, {0, cat.next, 0, 0});
  cat.next += c;
  return arena_.view(cat.out.mem, md, eng_);
}

memory NetworkBuilder::input(const memory::desc& md) { return in_user_ = memory(md, eng_, DNNL_MEMORY_NONE); }
memory NetworkBuilder::output(const memory::desc& md) { return out_user_ = memory(md, eng_, DNNL_MEMORY_NONE); }

void NetworkBuilder::add_reorder(const memory& from, const memory& to, const dnnl::primitive_attr& attr) {
  add(dnnl::reorder::primitive_desc(from, to, attr), Args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

std::shared_ptr<const Scratch> NetworkBuilder::scratch(std::size_t floats_per_thread) {
  assert(!finished_);
  scratch_->floats_ = std::max(scratch_->floats_, floats_per_thread);
  return scratch_;
}

void NetworkBuilder::finish(int share, int shares) {
  const std::size_t n = ops_.size();
  const std::size_t first =
      shares > 1 ? n * static_cast<std::size_t>(share % shares) / static_cast<std::size_t>(shares) : 0;
  for (std::size_t j = 0; j < n; ++j) {
    Op& op = ops_[(first + j) % n];
    if (!op.own) op.prim = dnnl::primitive(op.pd.get());
  }
  arena_bytes_ = arena_.place(ops_);
  if (scratch_->floats_)
    scratch_->data_ = aligned_bytes(scratch_->floats_ * sizeof(float) * static_cast<std::size_t>(threads_));
  finished_ = true;
  ++g_builds;
}

void NetworkBuilder::run(dnnl::stream& s, const float* in, float* out) {
  assert(finished_);
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

float QuantPoints::step(const std::string& point) const {
  if (ranges_)
    if (const auto it = ranges_->find(point); it != ranges_->end()) return it->second > 0 ? it->second / 255.0f : 1.0f;
  throw ReplicaError(source_ + ": the int8 calibration has no range for " + point +
                     " (made for another model? run `vecbench calibrate` for this one)");
}

Act QuantPoints::new_point(NetworkBuilder& net, const std::string& point, int c, int h, int w) const {
  Act a = net.new_act(c, h, w);
  if (net.int8()) a.scale = step(point);
  return a;
}

void QuantPoints::observe(NetworkBuilder& net, const std::string& point, const Act& a) const {
  if (!observe_ || net.act().type != dt::f32) return;
  const memory m = a.mem;
  const std::size_t n = m.get_desc().get_size() / sizeof(float);
  auto ranges = observe_;
  net.add_own(
      [m, n, ranges, point]() {
        const auto* p = static_cast<const float*>(m.get_data_handle());
        float hi = 0.0f;
        for (std::size_t i = 0; i < n; ++i) hi = std::max(hi, p[i]);
        ranges->record(point, hi);
      },
      Args{{DNNL_ARG_SRC, m}});
}

}  // namespace vecbench::onednn_detail
