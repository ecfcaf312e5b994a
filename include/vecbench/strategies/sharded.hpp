// `sharded`: the seed's own attempt done right. The list is split into N contiguous chunks, one
// per device; each device's thread decodes its own chunk and runs it on its own replica.
#pragma once
#include "vecbench/pipeline/threaded.hpp"

namespace vecbench {

class ShardedStrategy : public Strategy {
 public:
  std::string name() const override { return "sharded"; }
  void run(RunContext& ctx) override {
    const auto chunks = split_contiguous(ctx.todo.size(), ctx.devices.size());
    std::atomic<bool> abort{false};
    std::atomic<std::size_t> next_seq{0};
    ReplicaRun r;
    r.on_abort = [&] { abort = true; };
    r.worker = [&](std::size_t i, Model& m) {
      const std::size_t B = static_cast<std::size_t>(std::max(1, ctx.settings.batch_size));
      Batch b = make_batch(ctx.settings.host_memory);
      for (std::size_t k = chunks[i].first; k < chunks[i].second && !abort && !ctx.stop_requested(); k += B) {
        b.seq = next_seq++;
        load_batch(ctx.source, ctx.todo, k, std::min(k + B, chunks[i].second), ctx.input_size, b, ctx.sink,
                   ctx.metrics);
        forward_batch(m, b, i, ctx.metrics);
        deliver_batch(b, m.feature_dim(), ctx.sink, ctx.metrics);
      }
    };
    run_replicas(ctx, r);
  }
};

}  // namespace vecbench
