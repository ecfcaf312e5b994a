// The network builder of the oneDNN engine (private to src/engine/): what any network built of
// oneDNN primitives and vecbench's own kernels owns, whatever its topology. Its op list, its
// activations (one arena, placed by live range), the per-thread scratch of the own kernels, the
// constants its ops read, and its quantization points. The layer builders (onednn_conv.hpp,
// onednn_pool.hpp) add ops to it through this interface only; a topology (onednn_topology.hpp:
// Inception-v3) owns one builder and its layer builders, and is the builder's only client that
// knows layer names. Nothing here derives from anything.
#pragma once
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "onednn_arena.hpp"
#include "onednn_common.hpp"
#include "vecbench/engine/onednn_inception.hpp"

namespace vecbench::onednn_detail {

/// An activation's element type and layout.
struct ActType {
  dt type = dt::f32;
  tag layout = tag::nChw16c;
};

/// oneDNN's format tag of a layout.
tag format_of(ActivationLayout l);

/// A concatenation along channels, filled slice by slice by the layers that write into it.
struct Concat {
  Act out;
  int next = 0;  ///< first channel not yet taken
};

/// The per-thread scratch of vecbench's own kernels: sized while the network is built (the
/// largest asked), allocated when it is finished; the ops hold it and read it at run time.
class Scratch {
 public:
  float* of_thread(int t) const { return static_cast<float*>(data_.get()) + floats_ * static_cast<std::size_t>(t); }

 private:
  friend class NetworkBuilder;
  std::size_t floats_ = 0;  ///< per thread
  std::shared_ptr<void> data_;
};

/// One network for one batch size under construction, then run: ops appended in order, buffers
/// registered without memory, then finish() makes the primitives and places the arena.
class NetworkBuilder {
 public:
  /// `batch` images per forward, `threads` OpenMP threads for the own kernels (the replica's),
  /// activations of type `act` until set_act says otherwise.
  NetworkBuilder(const dnnl::engine& eng, int batch, int threads, ActType act);
  NetworkBuilder(const NetworkBuilder&) = delete;
  NetworkBuilder& operator=(const NetworkBuilder&) = delete;

  const dnnl::engine& engine() const { return eng_; }
  int batch() const { return n_; }
  int threads() const { return threads_; }

  /// The type of the activations made from here on (a topology may build a layer in another).
  const ActType& act() const { return act_; }
  void set_act(ActType a) { act_ = a; }
  bool int8() const { return act_.type == dt::u8; }

  memory::desc act_desc(int c, int h, int w) const { return memory::desc({n_, c, h, w}, act_.type, act_.layout); }
  /// A fresh activation of the current type, in the arena.
  Act new_act(int c, int h, int w) { return Act{arena_.add(act_desc(c, h, w), eng_), c, h, w}; }
  /// A fresh buffer of layout `md`, in the arena.
  memory buffer(const memory::desc& md) { return arena_.add(md, eng_); }
  /// A view of layout `md` of arena buffer `parent`, `bytes` into it.
  memory view(const memory& parent, const memory::desc& md, std::size_t bytes = 0) {
    return arena_.view(parent, md, eng_, bytes);
  }
  /// The next `c` channels of `cat`, as a view of its buffer.
  memory slice(Concat& cat, int c);

  /// The caller's buffers (not in the arena): run() points them at its input and output.
  memory input(const memory::desc& md);
  memory output(const memory::desc& md);

  /// Appends a oneDNN primitive (made by finish()) reading and writing `args`.
  void add(const dnnl::primitive_desc_base& pd, Args args) { ops_.emplace_back(pd, std::move(args)); }
  /// Appends a function of vecbench's own; `args` lists the memories it touches (live ranges).
  void add_own(std::function<void()> fn, Args args) { ops_.emplace_back(std::move(fn), std::move(args)); }
  /// Appends a reorder of `from` into `to` (with `attr`'s scales).
  void add_reorder(const memory& from, const memory& to, const dnnl::primitive_attr& attr = {});
  std::size_t op_count() const { return ops_.size(); }

  /// Floats the ops read for as long as the network lives (an int8 layer's scaled bias).
  std::vector<float>& keep(std::size_t n) { return kept_.emplace_back(n); }
  /// The own kernels' scratch, at least `floats_per_thread` per thread once finished.
  std::shared_ptr<const Scratch> scratch(std::size_t floats_per_thread);

  /// Makes the primitives (oneDNN generates each one's code here: most of an int8 or bf16
  /// start) and places the arena. Replicas building the same network at once share identical
  /// primitives through oneDNN's primitive cache, where one waits while another generates;
  /// `share` of `shares` starts at its own share of the list, so that they generate different
  /// primitives side by side and then find the rest in the cache.
  void finish(int share = 0, int shares = 1);
  std::size_t arena_bytes() const { return arena_bytes_; }

  /// One forward: `in` and `out` as input() and output() described them.
  void run(dnnl::stream& s, const float* in, float* out);

 private:
  dnnl::engine eng_;
  int n_;
  int threads_;
  ActType act_;
  memory in_user_, out_user_;
  ActivationArena arena_;
  std::size_t arena_bytes_ = 0;
  std::vector<Op> ops_;
  std::deque<std::vector<float>> kept_;
  std::shared_ptr<Scratch> scratch_ = std::make_shared<Scratch>();
  bool finished_ = false;
};

/// The int8 quantization points of a network (by name: a layer's output, a block's
/// concatenation): their calibrated steps, or (calibration, fp32) the op that records each
/// point's largest value.
class QuantPoints {
 public:
  /// `source`: the weights' file, named in errors.
  QuantPoints(const OneDnnOptions& opt, std::string source)
      : ranges_(opt.int8_ranges), observe_(opt.observe), source_(std::move(source)) {}
  /// The u8 step of `point` from its calibrated range (largest value).
  float step(const std::string& point) const;
  /// Whether the network records ranges (`vecbench calibrate`).
  bool observing() const { return observe_ != nullptr; }
  /// A fresh activation that is a quantization point (int8: with its step).
  Act new_point(NetworkBuilder& net, const std::string& point, int c, int h, int w) const;
  /// Calibration (fp32 activations): records the largest value of `a` once the op before has run.
  void observe(NetworkBuilder& net, const std::string& point, const Act& a) const;

 private:
  std::shared_ptr<const std::map<std::string, float>> ranges_;
  std::shared_ptr<ActivationRanges> observe_;
  std::string source_;
};

}  // namespace vecbench::onednn_detail
