// A batch: the images of one forward call, assembled straight into the model's input buffer.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "vecbench/core/metrics.hpp"
#include "vecbench/core/sink.hpp"
#include "vecbench/input/image_source.hpp"

namespace vecbench {

struct Batch {
  std::size_t seq = 0;               ///< position of the batch in the run
  std::vector<std::size_t> indices;  ///< input indices of the images that loaded (in order)
  std::vector<float> input;          ///< n*3*S*S floats
  std::vector<float> output;         ///< n*dim floats
  Clock::time_point created;         ///< when loading began (for per-batch latency)
  int n() const { return static_cast<int>(indices.size()); }
};

/// Loads inputs `todo[begin, end)` into `b`, decoding each image straight into its slot of the
/// input buffer. Failed images go to `sink.on_error` (and `metrics`) and are left out.
inline void load_batch(const ImageSource& src, const std::vector<std::size_t>& todo, std::size_t begin, std::size_t end,
                       int size, Batch& b, ResultSink& sink, Metrics& metrics) {
  b.created = Clock::now();
  b.indices.clear();
  trace_batch(static_cast<std::int64_t>(b.seq), static_cast<int>(end - begin));
  const std::size_t per = static_cast<std::size_t>(size) * size * 3;
  b.input.resize((end - begin) * per);
  StageTimes t;
  for (std::size_t k = begin; k < end; ++k) {
    const std::size_t idx = todo[k];
    try {
      src.load(idx, size, b.input.data() + b.indices.size() * per, t);
      b.indices.push_back(idx);
    } catch (const std::exception& e) {
      sink.on_error(idx, e.what());
      metrics.add_result(false);
    }
  }
  trace_batch(static_cast<std::int64_t>(b.seq), b.n());
  {
    StageTimer timer(t, Stage::assemble);
    b.input.resize(b.indices.size() * per);
  }
  metrics.add_stages(t);
}

}  // namespace vecbench
