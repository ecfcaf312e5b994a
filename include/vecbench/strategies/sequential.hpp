// `sequential`: one device, one thread, batch B. With B = 1 this is the seed's single-GPU loop.
#pragma once
#include <thread>

#include "vecbench/pipeline/strategy.hpp"
#include "vecbench/pipeline/threaded.hpp"

namespace vecbench {

namespace detail {
/// One thread: make every listed replica, then for each (replica, chunk) in turn run the chunk
/// batch by batch with blocking calls: load, forward, deliver. Nothing overlaps.
inline void blocking_loop(RunContext& ctx, const std::vector<std::size_t>& device_ids,
                          const std::vector<std::pair<std::size_t, std::size_t>>& chunks) {
  ErrorCollector errors;
  std::thread t([&] {
    try {
      std::vector<std::unique_ptr<Model>> models;
      for (std::size_t d : device_ids) models.push_back(make_replica(ctx, ctx.devices[d]));
      ctx.metrics.mark_start();
      const std::size_t B = static_cast<std::size_t>(std::max(1, ctx.settings.batch_size));
      Batch b;
      for (std::size_t k = 0; k < device_ids.size(); ++k) {
        Model& m = *models[k];
        for (std::size_t i = chunks[k].first; i < chunks[k].second && !ctx.stop_requested(); i += B) {
          load_batch(ctx.source, ctx.todo, i, std::min(i + B, chunks[k].second), ctx.input_size, b, ctx.sink,
                     ctx.metrics);
          forward_batch(m, b, device_ids[k], ctx.metrics);
          deliver_batch(b, m.feature_dim(), ctx.sink, ctx.metrics);
        }
        ctx.metrics.set_peak_memory(device_ids[k], m.peak_memory_bytes());
      }
    } catch (...) {
      errors.capture();
    }
  });
  t.join();
  errors.rethrow_if_any();
}
}  // namespace detail

class SequentialStrategy : public Strategy {
 public:
  std::string name() const override { return "sequential"; }
  void run(RunContext& ctx) override { detail::blocking_loop(ctx, {0}, {{0, ctx.todo.size()}}); }
};

}  // namespace vecbench
