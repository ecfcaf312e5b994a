// A batch: the images of one forward call, assembled straight into the model's input buffer.
#pragma once
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "vecbench/core/run/metrics.hpp"
#include "vecbench/core/run/sink.hpp"
#include "vecbench/core/system/host_memory.hpp"
#include "vecbench/input/device_decode.hpp"
#include "vecbench/input/image_source.hpp"

namespace vecbench {

struct Batch {
  std::size_t seq = 0;               ///< position of the batch in the run
  std::vector<std::size_t> indices;  ///< input indices of the images that loaded (in order)
  HostFloats input;                  ///< n*3*S*S floats, in the run's host memory (RunSettings::host_memory)
  std::vector<float> output;         ///< n*dim floats
  /// `--decode gpu`: the slots still held as JPEG bytes, decoded by the replica (Model::forward_encoded).
  EncodedImages encoded;
  /// Slots whose file failed in the replica's decoding (with the message): not delivered.
  std::vector<std::pair<int, std::string>> failed_slots;
  Clock::time_point created;  ///< when loading began (for per-batch latency)
  int n() const { return static_cast<int>(indices.size()); }
};

/// An empty batch whose input buffer will live in `mem` (null: ordinary memory).
inline Batch make_batch(HostMemory* mem) {
  Batch b;
  b.input = HostFloats(HostAllocator<float>(mem));
  return b;
}

/// Batches that have been delivered, handed back for the next ones (data-parallel's writer gives,
/// its decoders take): their buffers keep their capacity, so a run allocates, and on CUDA pins,
/// about as many input buffers as it has batches in flight, not one a batch. Thread-safe.
class BatchRecycler {
 public:
  /// Keeps at most `keep` idle batches (more are freed); new ones get their input from `mem`.
  BatchRecycler(HostMemory* mem, std::size_t keep) : mem_(mem), keep_(keep) {}
  Batch take() {
    {
      std::lock_guard<std::mutex> lk(m_);
      if (!idle_.empty()) {
        Batch b = std::move(idle_.back());
        idle_.pop_back();
        return b;
      }
    }
    return make_batch(mem_);
  }
  void give(Batch&& b) {
    std::lock_guard<std::mutex> lk(m_);
    if (idle_.size() < keep_) idle_.push_back(std::move(b));
  }

 private:
  HostMemory* mem_;
  std::size_t keep_;
  std::mutex m_;
  std::vector<Batch> idle_;
};

/// Loads inputs `todo[begin, end)` into `b`, decoding each image straight into its slot of the
/// input buffer (or, with `--decode gpu`, keeping a JPEG's bytes in `b.encoded` for the replica).
/// Failed images go to `sink.on_error` (and `metrics`) and are left out.
inline void load_batch(const ImageSource& src, const std::vector<std::size_t>& todo, std::size_t begin, std::size_t end,
                       int size, Batch& b, ResultSink& sink, Metrics& metrics) {
  b.created = Clock::now();
  b.indices.clear();
  trace_batch(static_cast<std::int64_t>(b.seq), static_cast<int>(end - begin));
  const std::size_t per = static_cast<std::size_t>(size) * size * 3;
  b.input.resize((end - begin) * per);
  b.encoded.clear();
  b.failed_slots.clear();
  StageTimes t;
  std::vector<std::uint8_t> bytes;
  for (std::size_t k = begin; k < end; ++k) {
    const std::size_t idx = todo[k];
    try {
      if (src.load_or_encoded(idx, size, b.input.data() + b.indices.size() * per, bytes, t)) {
        b.encoded.slot.push_back(static_cast<int>(b.indices.size()));
        b.encoded.bytes.push_back(std::move(bytes));
        bytes = {};
      }
      b.indices.push_back(idx);
    } catch (const std::exception& e) {
      sink.on_error(idx, e.what());
      metrics.add_result(false);
    }
  }
  b.encoded.mode = src.resize_mode();
  if (!b.encoded.empty())  // the host decoder for what the replica's decoder rejects
    b.encoded.cpu_fallback = [&src, size, indices = b.indices](int slot, float* dst) {
      StageTimes ignored;
      src.load(indices.at(static_cast<std::size_t>(slot)), size, dst, ignored);
    };
  trace_batch(static_cast<std::int64_t>(b.seq), b.n());
  {
    StageTimer timer(t, Stage::assemble);
    b.input.resize(b.indices.size() * per);
  }
  metrics.add_stages(t);
}

}  // namespace vecbench
