// The activations of one oneDNN network in one arena, placed by their live ranges (private to
// src/engine/).
#pragma once
#include <algorithm>
#include <climits>
#include <numeric>
#include <vector>

#include "onednn_common.hpp"

namespace vecbench::onednn_detail {

/// The activations of one network in one arena: buffers are registered as the network is
/// built (without memory), then placed by their live ranges in the op list, so that a buffer's
/// bytes are reused once the last op that touches it has run (ops run in order on one stream).
class ActivationArena {
 public:
  /// A new buffer of layout `md`, placed by place().
  memory add(const memory::desc& md, const dnnl::engine& eng) {
    memory m(md, eng, DNNL_MEMORY_NONE);
    ids_[m.get()] = bufs_.size();
    bufs_.push_back(Buf{md.get_size(), {{m, 0}}});
    return m;
  }
  /// A view of registered buffer `parent` (e.g. a slice of a concatenation: `md` holds its offset),
  /// starting `bytes` into it (a strided view of some of its columns).
  memory view(const memory& parent, const memory::desc& md, const dnnl::engine& eng, std::size_t bytes = 0) {
    memory m(md, eng, DNNL_MEMORY_NONE);
    const std::size_t id = ids_.at(parent.get());
    ids_[m.get()] = id;
    bufs_[id].views.push_back({m, bytes});
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
      for (auto [m, bytes] : b.views) m.set_data_handle(static_cast<char*>(arena_.get()) + b.offset + bytes);
    return total;
  }

 private:
  struct Buf {
    std::size_t bytes = 0;
    std::vector<std::pair<memory, std::size_t>> views;  ///< the buffer's memory and its slices, bytes into it
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

}  // namespace vecbench::onednn_detail
