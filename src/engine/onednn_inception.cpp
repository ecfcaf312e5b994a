// Inception-v3 as oneDNN primitives (see include/vecbench/engine/onednn_inception.hpp). No LibTorch here.
#include "vecbench/engine/onednn_inception.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dnnl.hpp>
#include <functional>
#include <iostream>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "vecbench/core/aligned.hpp"
#include "vecbench/core/error.hpp"
#include "vecbench/engine/first_conv.hpp"
#include "vecbench/engine/pool_kernels.hpp"
#include "vecbench/engine/weights_file.hpp"
#include "vecbench/engine/winograd.hpp"

#include "packed_weight_cache.hpp"

namespace vecbench {

std::shared_ptr<PackedWeightCache> new_packed_weight_cache() { return std::make_shared<PackedWeightCache>(); }

namespace {

using dnnl::algorithm;
using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using Args = std::unordered_map<int, memory>;
/// One step of a forward pass: a oneDNN primitive (its descriptor, the primitive made once the
/// network is built: Graph::make_primitives), or a function of vecbench's own (`own`) that reads
/// and writes the memories in `args` (listed for the arena's live ranges).
struct Op {
  Op(dnnl::primitive_desc_base d, Args a) : pd(std::move(d)), args(std::move(a)) {}
  Op(std::function<void()> f, Args a) : own(std::move(f)), args(std::move(a)) {}
  dnnl::primitive_desc_base pd;
  dnnl::primitive prim;
  std::function<void()> own;
  Args args;
};

std::atomic<std::size_t> g_builds{0}, g_packs{0}, g_packed_bytes{0}, g_amx_convs{0}, g_weight_memories{0},
    g_own_first_layers{0}, g_own_poolings{0};

constexpr std::size_t kAlign = 64;  ///< offsets in the activation arena: aligned_block's boundary
std::size_t round_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
/// core/aligned.hpp's 64-byte blocks; running out of memory is the replica's error.
std::shared_ptr<void> aligned_bytes(std::size_t n) {
  try {
    return aligned_shared_bytes(n);
  } catch (const std::bad_alloc&) {
    throw ReplicaError("onednn engine: out of memory (" + std::to_string(n >> 20) + " MB)");
  }
}

constexpr const char* corrupted_entry = " does not match its checksum (the file is corrupted): packed again\n";

/// The largest |w| of `n` floats, 0 for none; NaNs ignored. In 16 lanes, so that the compiler
/// vectorizes it (2.7x the one-accumulator loop, the int8 route's per-channel weight scales at
/// each start); exact in any order: a maximum does not round.
float abs_max(const float* w, std::size_t n) {
  float lane[16] = {};
  const std::size_t whole = n / 16 * 16;
  for (std::size_t k = 0; k < whole; k += 16)
    for (int j = 0; j < 16; ++j) {
      const float a = std::fabs(w[k + static_cast<std::size_t>(j)]);
      lane[j] = lane[j] < a ? a : lane[j];
    }
  float hi = 0.0f;
  for (const float x : lane) hi = std::max(hi, x);
  for (std::size_t t = whole; t < n; ++t) hi = std::max(hi, std::fabs(w[t]));
  return hi;
}

/// Whether a layout pads a dimension (AMX's bf16 weights pad channels to their blocks).
bool padded_layout(const memory::desc& md) {
  for (int i = 0; i < md.data.ndims; ++i)
    if (md.data.padded_dims[i] != md.data.dims[i]) return true;
  return false;
}

/// The weights of layer `name` (OIHW floats `l`) in layout `want`, from the cache; packed into it
/// by the first caller.
/// int8: `out_scale` holds 1 / each output channel's weight scale (the reorder quantizes to s8).
memory shared_weights(PackedWeightCache& cache, const std::string& name, const FoldedConv& l, const memory::desc& want,
                      const dnnl::engine& eng, const std::vector<float>* out_scale = nullptr) {
  std::lock_guard<std::mutex> lk(cache.mu);
  auto& entries = cache.layers[name];
  const bool scaled = out_scale != nullptr;
  std::string src;  // the source's checksum, computed once where needed
  const auto source = [&]() -> const std::string& {
    // int8's s8 weights: the floats and the per-channel scales they are packed with, so that
    // bytes packed under other scales (another version of vecbench's arithmetic) are never taken
    if (src.empty())
      src = scaled ? scaled_xxh3(l.weight.data(), l.weight.size(), out_scale->data(), out_scale->size())
                   : floats_xxh3(l.weight.data(), l.weight.size());
    return src;
  };
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (!(it->desc == want) || it->scaled != scaled) continue;
    // An entry is handed to a network (and gets its memory) only once verified, and a verified
    // entry is never erased or its bytes replaced: what a running network reads stays put.
    if (!it->verified) {  // read from a file: made from these floats, and its bytes as written?
      assert(!it->mem);
      const bool intact = it->bytes_xxh3 == xxh3_hex(it->data.get(), want.get_size());
      if (!intact || it->src_xxh3 != source()) {
        if (!intact) std::cerr << "vecbench: packed weights cache " + cache.file + ": " + name + corrupted_entry;
        entries.erase(it);  // packed again below, and the file written again
        cache.dirty = true;
        break;
      }
      if (padded_layout(want)) {  // oneDNN zeroes a padded layout's padding: not in the read-only mapping
        auto own = aligned_bytes(want.get_size());
        std::memcpy(own.get(), it->data.get(), want.get_size());
        it->data = std::move(own);
      }
      it->verified = true;
    }
    if (!it->mem) {  // made once (it writes a padded layout's padding), before any network reads it
      it->mem = memory(want, eng, it->data.get());
      ++g_weight_memories;
    }
    return it->mem;
  }
  auto data = aligned_bytes(want.get_size());
  memory packed(want, eng, data.get());
  memory user({{l.shape[0], l.shape[1], l.shape[2], l.shape[3]}, dt::f32, tag::oihw}, eng,
              const_cast<float*>(l.weight.data()));
  dnnl::stream s(eng);
  dnnl::primitive_attr attr;
  if (out_scale) attr.set_output_scales(1, *out_scale);  // per output channel: dim 0 of OIHW
  dnnl::reorder(dnnl::reorder::primitive_desc(user, packed, attr)).execute(s, user, packed);
  s.wait();
  ++g_weight_memories;
  // the checksum is for the packed-weights file only: none without one
  const bool saved = !cache.file.empty();
  entries.push_back({want, std::move(data), scaled, saved ? source() : std::string(), true, {}, packed});
  // a layout the file cannot hold (s8 weights with a compensation) is packed at every start: it
  // must not make every start write the file again
  cache.dirty = cache.dirty || packable_weights_desc(want.data);
  ++g_packs;
  g_packed_bytes += want.get_size();
  return packed;
}

/// The activations of one network in one arena: buffers are registered as the network is
/// built (without memory), then placed by their live ranges in the op list, so that a buffer's
/// bytes are reused once the last op that touches it has run (ops run in order on one stream).
class ActivationArena {
 public:
  /// A new buffer of layout `md`, placed by place().
  memory add(const memory::desc& md, const dnnl::engine& eng) {
    memory m(md, eng, DNNL_MEMORY_NONE);
    ids_[m.get()] = bufs_.size();
    bufs_.push_back(Buf{md.get_size(), {m}});
    return m;
  }
  /// A view of registered buffer `parent` (e.g. a slice of a concatenation: `md` holds its offset).
  memory view(const memory& parent, const memory::desc& md, const dnnl::engine& eng) {
    memory m(md, eng, DNNL_MEMORY_NONE);
    const std::size_t id = ids_.at(parent.get());
    ids_[m.get()] = id;
    bufs_[id].views.push_back(m);
    return m;
  }
  /// Places every buffer and points its views at their bytes; returns the arena's size.
  std::size_t place(const std::vector<Op>& ops) {
    for (std::size_t i = 0; i < ops.size(); ++i)
      for (const auto& arg : ops[i].args) {
        const auto it = ids_.find(arg.second.get());
        if (it == ids_.end()) continue;
        Buf& b = bufs_[it->second];
        b.first = std::min(b.first, static_cast<int>(i));
        b.last = std::max(b.last, static_cast<int>(i));
      }
    std::vector<std::size_t> order(bufs_.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return bufs_[a].bytes > bufs_[b].bytes; });
    std::vector<std::size_t> placed;
    std::size_t total = 0;
    for (const std::size_t id : order) {
      Buf& b = bufs_[id];
      b.offset = lowest_free_offset(b, placed);
      placed.push_back(id);
      total = std::max(total, b.offset + round_up(b.bytes));
    }
    arena_ = aligned_bytes(total);
    for (const auto& b : bufs_)
      for (auto m : b.views) m.set_data_handle(static_cast<char*>(arena_.get()) + b.offset);
    return total;
  }

 private:
  struct Buf {
    std::size_t bytes = 0;
    std::vector<memory> views;  ///< the buffer's memory and its slices
    int first = INT_MAX, last = -1;
    std::size_t offset = 0;
  };
  /// The lowest offset where `b` overlaps no placed buffer that is live at the same time.
  std::size_t lowest_free_offset(const Buf& b, const std::vector<std::size_t>& placed) const {
    std::vector<std::pair<std::size_t, std::size_t>> taken;
    for (const std::size_t p : placed) {
      const Buf& q = bufs_[p];
      if (q.first <= b.last && b.first <= q.last) taken.emplace_back(q.offset, q.offset + round_up(q.bytes));
    }
    std::sort(taken.begin(), taken.end());
    std::size_t off = 0;
    for (const auto& [begin, end] : taken) {
      if (off + round_up(b.bytes) <= begin) break;
      off = std::max(off, end);
    }
    return off;
  }
  std::unordered_map<dnnl_memory_t, std::size_t> ids_;
  std::vector<Buf> bufs_;
  std::shared_ptr<void> arena_;
};

/// Runs fn(first, last) on `threads` OpenMP threads, each taking its contiguous share of
/// [0, count): how the ops of vecbench's own kernels split their rows (or images) over a
/// replica's threads (the kernels' results do not depend on the split).
template <class F>
void split_rows(int threads, int count, const F& fn) {
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    fn(count * t / nt, count * (t + 1) / nt);
  }
}

bool has_isa(dnnl::cpu_isa isa) {
  const auto have = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (have & static_cast<unsigned>(isa)) == static_cast<unsigned>(isa);
}

bool is_reference(const char* impl) { return std::strncmp(impl, "ref", 3) == 0; }

/// One activation: its memory and its logical shape (N is the graph's batch).
struct Act {
  memory mem;
  int c = 0, h = 0, w = 0;
  float scale = 1.0f;  ///< int8 (u8) activations: the real value of one step
};

/// The primitives of one forward pass for one batch size, with their weights packed for them.
class Graph {
 public:
  /// `share` of `shares`: this replica's place among the replicas building the same network at
  /// once (make_primitives).
  Graph(const InceptionWeights& wts, const OneDnnOptions& opt, dnnl::engine& eng, int n, int threads, int share = 0,
        int shares = 1)
      : wts_(wts), opt_(opt), eng_(eng), n_(n), threads_(std::max(1, threads)) {
    // One blocked layout for every activation: 16 channels per block where oneDNN runs AVX-512
    // code, 8 otherwise (AVX2). Every Inception-v3 channel count and concat offset is a multiple of 16.
    const bool avx512 = has_isa(dnnl::cpu_isa::avx512_core);
    fmt_ = f32_fmt_ = avx512 ? tag::nChw16c : tag::nChw8c;
    act_dt_ = opt.precision == Precision::bf16 ? dt::bf16 : dt::f32;
    // bf16 on AMX: oneDNN 2.6 runs AMX (brgconv) only on channels-last activations; on the
    // blocked layout it takes its AVX-512 bf16 code, slower there than fp32
    // (results/levers/bf16-amx-20261203.md).
    if (act_dt_ == dt::bf16 && onednn_bf16_amx()) fmt_ = tag::nhwc;
    if (opt.precision == Precision::int8) {  // oneDNN's int8 convolutions run channels-last
      act_dt_ = dt::u8;
      fmt_ = tag::nhwc;
      if (!opt.int8_ranges) throw ReplicaError(wts_.source + ": the int8 route needs a calibration (onednn engine)");
    }
    // The engine's own Winograd (engine/winograd.hpp) on every 3x3, 5x5, 1x7, 7x1, 1x3 and 3x1
    // stride-1 layer: oneDNN 2.x has none in its AVX2 code and none but 3x3, and on AVX-512 its 3x3 one takes
    // fewer layers and runs slower (results/kernels/winograd-avx512-20261203.md); layers these
    // kernels don't fit run oneDNN's direct code.
    block_ = avx512 ? 16 : 8;
    own_winograd_ = opt.winograd && winograd::available(block_);
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
  memory::desc act_desc(int c, int h, int w) const { return memory::desc({n_, c, h, w}, act_dt_, fmt_); }
  Act new_act(int c, int h, int w) { return Act{arena_.add(act_desc(c, h, w), eng_), c, h, w}; }
  bool int8() const { return act_dt_ == dt::u8; }

  /// int8: the u8 step of quantization point `point` from its calibrated range (largest value).
  float point_scale(const std::string& point) const {
    const auto it = opt_.int8_ranges->find(point);
    if (it == opt_.int8_ranges->end())
      throw ReplicaError(wts_.source + ": the int8 calibration has no range for " + point +
                         " (made for another model? run `vecbench calibrate` for this one)");
    return it->second > 0 ? it->second / 255.0f : 1.0f;
  }
  /// A fresh activation that is a quantization point (a layer's output, a block's concatenation).
  Act new_point(const std::string& point, int c, int h, int w) {
    Act a = new_act(c, h, w);
    if (int8()) a.scale = point_scale(point);
    return a;
  }
  /// Calibration (opt_.observe, fp32): records the largest value of `a` once the op before has run.
  void observe(const std::string& point, const Act& a) {
    if (!opt_.observe || act_dt_ != dt::f32) return;
    const memory m = a.mem;
    const std::size_t n = m.get_desc().get_size() / sizeof(float);
    auto ranges = opt_.observe;
    ops_.emplace_back(
        [m, n, ranges, point]() {
          const auto* p = static_cast<const float*>(m.get_data_handle());
          float hi = 0.0f;
          for (std::size_t i = 0; i < n; ++i) hi = std::max(hi, p[i]);
          ranges->record(point, hi);
        },
        Args{{DNNL_ARG_SRC, m}});
  }

  const FoldedConv& find_layer(const std::string& name) const {
    auto it = wts_.convs.find(name);
    if (it == wts_.convs.end()) throw ReplicaError(wts_.source + ": layer " + name + " is missing (onednn engine)");
    return it->second;
  }
  /// The layer, checked to take `in_c` input channels.
  const FoldedConv& layer(const std::string& name, int in_c) const {
    const auto& l = find_layer(name);
    if (l.shape[1] != in_c)
      throw ReplicaError(wts_.source + ": layer " + name + " expects " + std::to_string(l.shape[1]) +
                         " input channels, the network gives it " + std::to_string(in_c));
    return l;
  }

  static int out_dim(int in, int k, int s, int p) { return (in + 2 * p - k) / s + 1; }

  /// conv+bias+ReLU from `src` into `dst` (a fresh activation or a slice of a concatenation).
  /// int8: `s_in` and `s_out` are the u8 steps of src and dst.
  /// `relu` false: conv+bias only (an f32 1x1 layer whose ReLU follows a pool, pool_branch).
  void conv_into(const std::string& name, const FoldedConv& l, const memory& src, const memory& dst, int stride, int ph,
                 int pw, float s_in = 1.0f, float s_out = 1.0f, bool relu = true) {
    const int oc = static_cast<int>(l.shape[0]), ic = static_cast<int>(l.shape[1]);
    const int kh = static_cast<int>(l.shape[2]), kw = static_cast<int>(l.shape[3]);
    if (own_winograd_ && act_dt_ == dt::f32 && stride == 1 && relu) {
      if (kh == 3 && kw == 3 && ph == pw && winograd_into(name, l, src, dst, winograd::Kernel::k3x3, ph)) return;
      if (kh == 5 && kw == 5 && ph == pw && winograd_into(name, l, src, dst, winograd::Kernel::k5x5, ph)) return;
      if (kh == 1 && kw == 7 && ph == 0 && winograd_into(name, l, src, dst, winograd::Kernel::k1x7, pw)) return;
      if (kh == 7 && kw == 1 && pw == 0 && winograd_into(name, l, src, dst, winograd::Kernel::k7x1, ph)) return;
      if (kh == 1 && kw == 3 && ph == 0 && winograd_into(name, l, src, dst, winograd::Kernel::k1x3, pw)) return;
      if (kh == 3 && kw == 1 && pw == 0 && winograd_into(name, l, src, dst, winograd::Kernel::k3x1, ph)) return;
    }
    memory::desc w_any({oc, ic, kh, kw}, int8() ? dt::s8 : act_dt_, tag::any);  // bf16: packed (and rounded) once, here
    memory::desc b_md({oc}, dt::f32, tag::x);
    dnnl::post_ops po;
    if (relu) po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    // int8: s8 weights with one scale per output channel (largest |w| -> 127); the s32 sums plus
    // the bias (in their units) times s_in * s_w / s_out give dst's u8 steps, after the ReLU.
    const float* bias_data = l.bias.data();
    std::vector<float> inv_w_scale;
    if (int8()) {
      const std::size_t per = static_cast<std::size_t>(ic) * kh * kw;
      std::vector<float> oscale(static_cast<std::size_t>(oc));
      std::vector<float>& qbias = int8_bias_.emplace_back(static_cast<std::size_t>(oc));
      inv_w_scale.resize(static_cast<std::size_t>(oc));
      for (std::size_t o = 0; o < static_cast<std::size_t>(oc); ++o) {
        const float hi = abs_max(l.weight.data() + o * per, per);
        const float sw = hi > 0 ? hi / 127.0f : 1.0f;
        inv_w_scale[o] = 1.0f / sw;
        oscale[o] = s_in * sw / s_out;
        qbias[o] = l.bias[o] / (s_in * sw);
      }
      attr.set_output_scales(2, oscale);  // per output channel: dim 1 of dst
      bias_data = qbias.data();
    }
    for (const bool dense_dst : {false, true}) {
      // A slice of a concatenation is not dense; where no implementation writes into one, the
      // layer writes a dense buffer and a reorder copies it into the slice.
      memory::desc dst_md =
          dense_dst ? memory::desc(dst.get_desc().dims(), dst.get_desc().data_type(), fmt_) : dst.get_desc();
      dnnl::convolution_forward::primitive_desc pd;
      try {
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algorithm::convolution_direct,
                                          src.get_desc(), w_any, b_md, dst_md, {stride, stride}, {ph, pw}, {ph, pw});
        pd = dnnl::convolution_forward::primitive_desc(d, attr, eng_);
      } catch (const dnnl::error&) {
        continue;
      }
      // oneDNN's reference code accepts everything at ~1% of the speed: only as a last resort
      if (is_reference(pd.impl_info_str()) && !dense_dst) continue;
      if (std::strstr(pd.impl_info_str(), "amx")) ++g_amx_convs;
      memory packed_w = shared_weights(*wts_.packed, name, l, pd.weights_desc(), eng_, int8() ? &inv_w_scale : nullptr);
      memory bias(pd.bias_desc(), eng_, const_cast<float*>(bias_data));  // f32, dense: the layer's own (int8: scaled)
      memory out = dense_dst ? arena_.add(pd.dst_desc(), eng_) : dst;
      ops_.emplace_back(
          pd, std::unordered_map<int, memory>{
                  {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, packed_w}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, out}});
      if (dense_dst)
        ops_.emplace_back(dnnl::reorder::primitive_desc(out, dst),
                          std::unordered_map<int, memory>{{DNNL_ARG_FROM, out}, {DNNL_ARG_TO, dst}});
      return;
    }
    throw ReplicaError(wts_.source + ": layer " + name + ": oneDNN has no convolution for it");
  }

  /// Where `m` (a `block`-channel blocked f32 activation, or a slice of one) keeps element
  /// (n, c, y, x); false for any other layout.
  static bool blocked(const memory& m, int block, winograd::BlockedTensor& t) {
    const dnnl_memory_desc_t& d = m.get_desc().data;
    const auto& b = d.format_desc.blocking;
    if (d.ndims != 4 || d.data_type != dnnl_f32 || d.format_kind != dnnl_blocked || b.inner_nblks != 1 ||
        b.inner_blks[0] != block || b.inner_idxs[0] != 1 || b.strides[3] != block)
      return false;
    t.offset = d.offset0;
    t.stride_n = b.strides[0], t.stride_cb = b.strides[1], t.stride_y = b.strides[2], t.stride_x = b.strides[3];
    return true;
  }

  /// conv+bias+ReLU of a 3x3, 5x5, 1x7, 7x1, 1x3 or 3x1 stride-1 layer with the engine's Winograd
  /// kernels (AVX2 or AVX-512); false where the kernels or the layouts don't fit (oneDNN runs it).
  bool winograd_into(const std::string& name, const FoldedConv& l, const memory& src, const memory& dst,
                     winograd::Kernel kernel, int pad) {
    winograd::BlockedTensor in, out;
    const auto dims = src.get_desc().dims();
    winograd::ConvShape shape{n_,
                              static_cast<int>(l.shape[1]),
                              static_cast<int>(l.shape[0]),
                              static_cast<int>(dims[2]),
                              static_cast<int>(dims[3]),
                              pad,
                              block_,
                              kernel};
    if (!winograd::supports(shape) || !blocked(src, block_, in) || !blocked(dst, block_, out)) return false;
    std::shared_ptr<const winograd::Filter> f;
    {
      auto& cache = *wts_.packed;
      std::lock_guard<std::mutex> lk(cache.mu);
      auto& slot = cache.winograd[name];
      const auto* have = slot.filter.get();
      bool fits = have && have->kernel == kernel && have->block == block_ && have->in_c == shape.in_c &&
                  have->out_c == shape.out_c;
      if (fits && !slot.verified) {  // read from a file: made from these floats, and its bytes as written?
        const bool intact = slot.bytes_xxh3 == filter_xxh3(*have);
        if (!intact) std::cerr << "vecbench: packed weights cache " + cache.file + ": " + name + corrupted_entry;
        fits = slot.verified =
            intact && slot.src_xxh3 == floats_xxh3(l.weight.data(), l.weight.size(), l.bias.data(), l.bias.size());
      }
      if (!fits) {  // made first: a transform that throws (out of memory) leaves no half slot behind
        auto made = winograd::make_filter(l.weight.data(), l.bias.data(), shape.out_c, shape.in_c, block_, kernel);
        slot = {std::move(made),
                cache.file.empty() ? std::string()  // no packed-weights file: nothing to check against
                                   : floats_xxh3(l.weight.data(), l.weight.size(), l.bias.data(), l.bias.size()),
                true,
                {}};
        cache.dirty = true;
        ++g_packs;
        g_packed_bytes += slot.filter->bytes();
      }
      f = slot.filter;
    }
    scratch_floats_ = std::max(scratch_floats_, winograd::scratch_floats(shape));
    const int groups = winograd::channel_groups(shape, threads_);
    const int units = winograd::block_count(shape) * groups, threads = std::min(threads_, units);
    ops_.emplace_back(
        [this, f, shape, in, out, src, dst, groups, units, threads]() mutable {
          in.data = static_cast<float*>(src.get_data_handle());
          out.data = static_cast<float*>(dst.get_data_handle());
#pragma omp parallel num_threads(threads)
          {
            const int t = omp_get_thread_num(), nt = omp_get_num_threads();
            winograd::run_units(*f, shape, in, out, groups, units * t / nt, units * (t + 1) / nt,
                                static_cast<float*>(scratch_.get()) + scratch_floats_ * static_cast<std::size_t>(t));
          }
        },
        Args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    return true;
  }

  Act conv(const std::string& name, const Act& x, int stride = 1, int pad = -1) {
    const auto& l = layer(name, x.c);
    const int kh = static_cast<int>(l.shape[2]), kw = static_cast<int>(l.shape[3]);
    const int ph = pad >= 0 ? pad : kh / 2, pw = pad >= 0 ? pad : kw / 2;
    Act y = new_point(name, static_cast<int>(l.shape[0]), out_dim(x.h, kh, stride, ph), out_dim(x.w, kw, stride, pw));
    conv_into(name, l, x.mem, y.mem, stride, ph, pw, x.scale, y.scale);
    observe(name, y);
    return y;
  }

  /// A concatenation along channels, filled slice by slice by the layers that write into it.
  struct Concat {
    Act out;
    int next = 0;  ///< first channel not yet taken
  };
  memory slice(Concat& cat, int c) {
    auto md = cat.out.mem.get_desc().submemory_desc({n_, c, cat.out.h, cat.out.w}, {0, cat.next, 0, 0});
    cat.next += c;
    return arena_.view(cat.out.mem, md, eng_);
  }
  int out_channels(const std::string& name) const { return static_cast<int>(find_layer(name).shape[0]); }
  /// Last layer of a branch, writing into the next slice of `cat` (stride-1 "same" padding
  /// unless `stride`/`pad` say otherwise).
  void conv_to(Concat& cat, const std::string& name, const Act& x, int stride = 1, int pad = -1) {
    const auto& l = layer(name, x.c);
    const int kh = static_cast<int>(l.shape[2]), kw = static_cast<int>(l.shape[3]);
    const int ph = pad >= 0 ? pad : kh / 2, pw = pad >= 0 ? pad : kw / 2;
    if (out_dim(x.h, kh, stride, ph) != cat.out.h || out_dim(x.w, kw, stride, pw) != cat.out.w)
      throw ReplicaError(wts_.source + ": layer " + name + " does not fit its block (onednn engine)");
    conv_into(name, l, x.mem, slice(cat, static_cast<int>(l.shape[0])), stride, ph, pw, x.scale, cat.out.scale);
  }

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
    if (own_pooling() && !opt_.observe && wts_.arch == "tf2015") return own_pool_branch(cat, name, x);
    if ((act_dt_ == dt::f32 || (act_dt_ == dt::bf16 && onednn_bf16_amx())) && !opt_.observe && wts_.arch == "tf2015") {
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
    return wts_.arch == "tf2015" ? algorithm::pooling_avg_exclude_padding : algorithm::pooling_avg_include_padding;
  }

  /// Whether this network's poolings run vecbench's kernels (engine/pool_kernels.hpp): int8 and
  /// bf16 on channels-last activations where onednn_own_pooling says so for this CPU.
  bool own_pooling() const {
    const bool runs = opt_.own_pooling && act_dt_ != dt::f32 && onednn_own_pooling(opt_.precision);
    assert(!runs || fmt_ == tag::nhwc);  // the layout onednn_own_pooling counts on
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
  /// straight into u8 or bf16 channels-last: where onednn_own_first_layer says so for this CPU
  /// (the output fingerprint asks it too) and the layer has its shape; else oneDNN's f32
  /// convolution and a reorder (also with OneDnnOptions::own_first_layer off).
  bool own_first_layer_runs() const {
    const std::array<int64_t, 4> shape{first_conv::kOutChannels, 3, 3, 3};
    const bool runs = opt_.own_first_layer && onednn_own_first_layer(opt_.precision) && first_.shape == shape &&
                      first_conv::out_dim(wts_.input_size) >= 8;
    assert(!runs || fmt_ == tag::nhwc);  // the layout onednn_own_first_layer counts on
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
    observe("Mixed_7c", x = block_e("Mixed_7c", x, wts_.arch == "tf2015"));
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

  const InceptionWeights& wts_;
  OneDnnOptions opt_;
  dnnl::engine& eng_;
  int n_;
  tag fmt_ = tag::nChw16c;
  tag f32_fmt_ = tag::nChw16c;  ///< the blocked layout of f32 activations here (int8: its first layer and last pool)
  dt act_dt_ = dt::f32;         ///< activations and weights: f32, or bf16 (f32 accumulation and bias)
  FoldedConv first_;            ///< Conv2d_1a_3x3 with the input normalization folded in
  memory in_user_, out_user_;
  ActivationArena arena_;  ///< every activation, placed after the build
  std::size_t arena_bytes_ = 0;
  std::vector<Op> ops_;
  std::deque<std::vector<float>> int8_bias_;  ///< int8: each layer's bias in its s32 sums' units
  int block_ = 8;                             ///< channels per block of the f32 layout (16 where oneDNN runs AVX-512)
  /// opt.winograd where the CPU has the kernels: 3x3, 5x5 and 1-D stride-1 layers by engine/winograd.hpp
  bool own_winograd_ = false;
  int threads_ = 1;                 ///< OpenMP threads of this replica (its device's), for own kernels
  std::size_t scratch_floats_ = 0;  ///< per thread, for the largest Winograd layer
  std::shared_ptr<void> scratch_;   ///< threads_ x scratch_floats_
  dnnl::stream* stream_ = nullptr;  ///< run()'s stream, for ops of vecbench's own that run primitives
};

/// The process's one CPU engine: every replica's primitives and memories belong to it (the
/// packed weights' memories are shared between replicas, PackedWeightCache::Entry::mem). Never
/// destroyed: a cache's memories may outlive any replica, up to the end of the process.
const dnnl::engine& cpu_engine() {
  static const auto* const eng = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *eng;
}

class OneDnnInception : public Model {
 public:
  OneDnnInception(std::shared_ptr<const InceptionWeights> w, const VirtualDevice& dev, const OneDnnOptions& opt)
      : w_(std::move(w)), dev_(dev), opt_(opt), eng_(cpu_engine()), stream_(eng_) {
    if (dev.is_cuda())
      throw ReplicaError(w_->source + ": the onednn engine runs on CPU devices only, not " + dev.name());
    if (opt.precision == Precision::fp16)
      throw ReplicaError("onednn engine: precision fp16 is not supported (use fp32, bf16 or int8)");
    std::string why;
    if (opt.precision == Precision::int8 && !onednn_int8_supported(&why)) throw ReplicaError("onednn engine: " + why);
    if (opt.precision == Precision::bf16 && !has_isa(dnnl::cpu_isa::avx512_core_bf16))
      throw ReplicaError("onednn engine: bf16 needs a CPU with AVX-512 BF16 (oneDNN runs " +
                         onednn_info()["isa"].get<std::string>() + " code here)");
    omp_set_num_threads(dev.threads);
    // The network is built by prepare() or the first forward, in this replica's thread.
  }
  int feature_dim() const override { return w_->feature_dim; }
  int input_size() const override { return w_->input_size; }
  /// A run's batch size: the network for exactly that batch (a pool's next run may use a smaller
  /// one, which should not run padded to the last run's).
  void prepare(int max_batch) override {
    max_batch = std::max(1, max_batch);
    if (!graph_ || max_batch != graph_->batch()) build(max_batch);
  }
  ForwardTiming forward(const float* in, int n, float* out) override {
    if (omp_get_max_threads() != dev_.threads) omp_set_num_threads(dev_.threads);  // naive: replicas share a thread
    ForwardTiming t;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      if (!graph_ || n > graph_->batch()) build(n);
      if (n == graph_->batch())
        graph_->run(stream_, in, out);
      else
        run_padded(in, n, out);
    } catch (const dnnl::error& e) {
      throw ReplicaError(dev_.name() + ": onednn forward failed: " + e.what());
    }
    t.forward_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return t;
  }

 private:
  void build(int n) {
    graph_.reset();  // one network at a time: the old one's memory goes first
    pad_in_.clear();
    pad_out_.clear();
    try {
      graph_ = std::make_unique<Graph>(*w_, opt_, eng_, n, dev_.threads, dev_.virtual_index, dev_.virtual_count);
    } catch (const dnnl::error& e) {
      throw ReplicaError(w_->source + ": building the oneDNN network failed: " + e.what());
    }
    save_packed_weights(*w_);  // what this build packed, for the next start (no-op when nothing new)
  }
  /// A partial batch on the full-batch network: the n images, then zeros (batch items never mix).
  void run_padded(const float* in, int n, float* out) {
    const std::size_t s = static_cast<std::size_t>(w_->input_size), N = static_cast<std::size_t>(graph_->batch());
    const std::size_t per_in = 3 * s * s, per_out = static_cast<std::size_t>(w_->feature_dim);
    if (pad_in_.empty()) pad_in_.assign(N * per_in, 0.0f), pad_out_.assign(N * per_out, 0.0f);
    std::copy(in, in + static_cast<std::size_t>(n) * per_in, pad_in_.begin());
    std::fill(pad_in_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(n) * per_in), pad_in_.end(), 0.0f);
    graph_->run(stream_, pad_in_.data(), pad_out_.data());
    std::copy(pad_out_.begin(), pad_out_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(n) * per_out),
              out);
  }
  std::shared_ptr<const InceptionWeights> w_;
  VirtualDevice dev_;
  OneDnnOptions opt_;
  dnnl::engine eng_;
  dnnl::stream stream_;
  std::unique_ptr<Graph> graph_;         ///< the one network, for the largest batch asked so far
  std::vector<float> pad_in_, pad_out_;  ///< a partial batch, padded to the network's batch
};

}  // namespace

nlohmann::json onednn_info() {
  const auto* v = dnnl::version();
  nlohmann::json j;
  j["version"] = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  const bool avx512 = has_isa(dnnl::cpu_isa::avx512_core);
  j["isa"] = avx512 ? "avx512_core" : has_isa(dnnl::cpu_isa::avx2) ? "avx2" : "older";
  // the engine's own kernels where the CPU has them (AVX-512: 16-channel blocks, AVX2: 8); direct
  // convolutions otherwise
  const bool own = winograd::available(avx512 ? 16 : 8);
  j["winograd"] = own;
  j["winograd_impl"] = own ? (avx512 ? "vecbench-avx512" : "vecbench-avx2") : "none";
  j["bf16"] = has_isa(dnnl::cpu_isa::avx512_core_bf16);
  j["amx"] = onednn_bf16_amx();  // bf16 and int8 only (bf16 channels-last then)
  j["int8"] = onednn_int8_supported();
  return j;
}

bool onednn_bf16_amx() { return has_isa(dnnl::cpu_isa::avx512_core_amx); }

std::string onednn_route_version(Precision precision, bool own_first_layer, bool own_pooling) {
  const bool first = own_first_layer && onednn_own_first_layer(precision);
  const bool pool = own_pooling && onednn_own_pooling(precision);
  return first ? (pool ? "v3" : "v2") : (pool ? "v1 pool" : "v1");
}

bool onednn_own_pooling(Precision precision) {
  // the kernels read and write channels-last, as onednn_own_first_layer's
  if (precision == Precision::int8) return onednn_int8_supported() && pool_kernels::available(pool_kernels::Type::u8);
  if (precision == Precision::bf16) return onednn_bf16_amx() && pool_kernels::available(pool_kernels::Type::bf16);
  return false;
}

bool onednn_own_first_layer(Precision precision) {
  // the kernel writes channels-last, the layout the Graph takes for int8 always and for bf16 on AMX only
  if (precision == Precision::int8) return onednn_int8_supported() && first_conv::available(first_conv::Output::u8);
  if (precision == Precision::bf16) return onednn_bf16_amx() && first_conv::available(first_conv::Output::bf16);
  return false;
}

const char* onednn_int8_isa() {
  if (has_isa(dnnl::cpu_isa::avx512_core_vnni)) return "avx512_core_vnni";
  if (has_isa(dnnl::cpu_isa::avx2_vnni)) return "avx2_vnni";
  return "none";
}

bool onednn_int8_supported(std::string* why) {
  if (has_isa(dnnl::cpu_isa::avx512_core_vnni) || has_isa(dnnl::cpu_isa::avx2_vnni)) return true;
  if (why)
    *why = "int8 needs a CPU with VNNI (AVX-512 VNNI or AVX-VNNI); oneDNN runs " +
           onednn_info()["isa"].get<std::string>() +
           " code here, where 8-bit products would be no faster than fp32's and saturate";
  return false;
}

OneDnnCounters onednn_counters() {
  OneDnnCounters c;
  c.network_builds = g_builds.load();
  c.weight_packs = g_packs.load();
  c.packed_bytes = g_packed_bytes.load();
  c.amx_convolutions = g_amx_convs.load();
  c.weight_memories = g_weight_memories.load();
  c.own_first_layers = g_own_first_layers.load();
  c.own_poolings = g_own_poolings.load();
  return c;
}

std::unique_ptr<Model> make_onednn_inception(std::shared_ptr<const InceptionWeights> weights, const VirtualDevice& dev,
                                             const OneDnnOptions& opt) {
  return std::make_unique<OneDnnInception>(std::move(weights), dev, opt);
}

}  // namespace vecbench
