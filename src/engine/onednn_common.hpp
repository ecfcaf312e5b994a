// The oneDNN engine's building blocks (private to src/engine/): the op list's element, an
// activation, the counters behind onednn_counters(), and small helpers the layers share.
#pragma once
#include <omp.h>
#include <dnnl.hpp>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>

#include "vecbench/core/base/aligned.hpp"
#include "vecbench/core/base/error.hpp"

namespace vecbench::onednn_detail {

using dnnl::algorithm;
using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using Args = std::unordered_map<int, memory>;
/// One step of a forward pass: a oneDNN primitive (its descriptor, the primitive made once the
/// network is built: NetworkBuilder::finish), or a function of vecbench's own (`own`) that reads
/// and writes the memories in `args` (listed for the arena's live ranges).
struct Op {
  Op(dnnl::primitive_desc_base d, Args a) : pd(std::move(d)), args(std::move(a)) {}
  Op(std::function<void()> f, Args a) : own(std::move(f)), args(std::move(a)) {}
  dnnl::primitive_desc_base pd;
  dnnl::primitive prim;
  std::function<void()> own;
  Args args;
};

/// onednn_counters()'s figures, counted by every network of the process.
inline std::atomic<std::size_t> g_builds{0}, g_packs{0}, g_packed_bytes{0}, g_amx_convs{0}, g_weight_memories{0},
    g_own_first_layers{0}, g_own_poolings{0};

constexpr std::size_t kAlign = 64;  ///< offsets in the activation arena: aligned_block's boundary
inline std::size_t round_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
/// An output side of a window of `k` at stride `s` over `in` padded by `p` on each side.
inline int out_dim(int in, int k, int s, int p) { return (in + 2 * p - k) / s + 1; }
/// core/base/aligned.hpp's 64-byte blocks; running out of memory is the replica's error.
inline std::shared_ptr<void> aligned_bytes(std::size_t n) {
  try {
    return aligned_shared_bytes(n);
  } catch (const std::bad_alloc&) {
    throw ReplicaError("onednn engine: out of memory (" + std::to_string(n >> 20) + " MB)");
  }
}

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

/// The ISA whose code oneDNN runs here, asked once per process (oneDNN fixes it at its first use
/// too): the one place it is asked.
inline unsigned effective_isa() {
  static const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return isa;
}

/// Whether oneDNN runs `isa`'s code here.
inline bool has_isa(dnnl::cpu_isa isa) {
  const unsigned have = effective_isa();
  return (have & static_cast<unsigned>(isa)) == static_cast<unsigned>(isa);
}

/// The process's one CPU engine: every replica's primitives and memories belong to it (the
/// packed weights' memories are shared between replicas, PackedWeightCache::Entry::mem). Never
/// destroyed: a cache's memories may outlive any replica, up to the end of the process.
inline const dnnl::engine& cpu_engine() {
  static const auto* const eng = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *eng;
}

inline bool is_reference(const char* impl) { return std::strncmp(impl, "ref", 3) == 0; }

/// One activation: its memory and its logical shape (N is the graph's batch).
struct Act {
  memory mem;
  int c = 0, h = 0, w = 0;
  float scale = 1.0f;  ///< int8 (u8) activations: the real value of one step
};

}  // namespace vecbench::onednn_detail
