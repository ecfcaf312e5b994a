// `sequential`: one device, one thread, batch B. With B = 1 this is the seed's single-GPU loop.
#pragma once
#include "vecbench/core/base/strategy_name.hpp"
#include "vecbench/pipeline/strategy.hpp"
#include "vecbench/pipeline/threaded.hpp"

namespace vecbench {

namespace detail {
/// Gets and warms every listed replica on its worker, then runs each (replica, chunk) in turn,
/// one job at a time: the job runs its chunk batch by batch with blocking calls (load, forward,
/// deliver) and the next job starts only when it has finished. Nothing overlaps.
inline void blocking_loop(RunContext& ctx, const std::vector<std::size_t>& device_ids,
                          const std::vector<std::pair<std::size_t, std::size_t>>& chunks) {
  {
    JobGroup ready;
    for (std::size_t d : device_ids)
      ready.add(ctx.pool.worker(d).submit([&ctx, d](Replica& r) {
        TraceThread lane(ctx.settings.trace, ctx.device_lane(d), static_cast<int>(d));
        prepare_replica(r, ctx.settings);
      }));
    ready.wait();
  }
  ctx.metrics.mark_start();
  const std::size_t B = static_cast<std::size_t>(std::max(1, ctx.settings.batch_size));
  std::size_t seq = 0;
  for (std::size_t k = 0; k < device_ids.size(); ++k) {
    const std::size_t dev = device_ids[k];
    ctx.pool.worker(dev)
        .submit([&, k, dev](Replica& r) {
          TraceThread lane(ctx.settings.trace, ctx.device_lane(dev), static_cast<int>(dev));
          Model& m = r.model();
          Batch b = make_batch(ctx.settings.host_memory);
          for (std::size_t i = chunks[k].first; i < chunks[k].second && !ctx.stop_requested(); i += B) {
            b.seq = seq++;
            load_batch(ctx.source, ctx.todo, i, std::min(i + B, chunks[k].second), ctx.input_size, b, ctx.sink,
                       ctx.metrics);
            forward_batch(m, b, dev, ctx.metrics);
            deliver_batch(b, m.feature_dim(), ctx.sink, ctx.metrics);
          }
          ctx.metrics.set_peak_memory(dev, m.peak_memory_bytes());
        })
        .get();  // blocking: the next chunk waits for this one
  }
}
}  // namespace detail

class SequentialStrategy : public Strategy {
 public:
  std::string name() const override { return kSequentialStrategy; }
  void run(RunContext& ctx) override { detail::blocking_loop(ctx, {0}, {{0, ctx.todo.size()}}); }
};

}  // namespace vecbench
