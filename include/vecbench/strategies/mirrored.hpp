// `mirrored`: synchronous split-batch, like nn.DataParallel or tf.distribute.MirroredStrategy.
// One global batch of B x N images is scattered across the N devices, every device runs its
// slice, the results are gathered, and only then does the next step begin: all in lockstep.
#pragma once
#include <condition_variable>
#include <mutex>

#include "vecbench/pipeline/threaded.hpp"

namespace vecbench {

class MirroredStrategy : public Strategy {
 public:
  std::string name() const override { return "mirrored"; }
  void run(RunContext& ctx) override {
    const std::size_t n = ctx.devices.size();
    const std::size_t B = static_cast<std::size_t>(std::max(1, ctx.settings.batch_size));
    std::vector<Batch> slices;
    for (std::size_t i = 0; i < n; ++i) slices.push_back(make_batch(ctx.settings.host_memory));
    std::mutex m;
    std::condition_variable cv;
    std::size_t generation = 0, pending = 0;
    bool finished = false, aborted = false;

    ReplicaRun r;
    r.on_abort = [&] {
      std::lock_guard<std::mutex> lk(m);
      aborted = true;
      cv.notify_all();
    };
    r.worker = [&](std::size_t i, Model& model) {
      std::size_t seen = 0;
      for (;;) {
        {
          TraceSpan wait(SpanKind::wait_input);  // the next step: the coordinator's loads and the slowest device
          std::unique_lock<std::mutex> lk(m);
          cv.wait(lk, [&] { return generation > seen || finished || aborted; });
          if (finished || aborted) return;
          seen = generation;
        }
        forward_batch(model, slices[i], i, ctx.metrics);
        std::lock_guard<std::mutex> lk(m);
        if (--pending == 0) cv.notify_all();
      }
    };
    r.coordinator = [&] {
      struct Finish {  // wake the workers however the coordinator leaves
        std::mutex& m;
        std::condition_variable& cv;
        bool& finished;
        ~Finish() {
          std::lock_guard<std::mutex> lk(m);
          finished = true;
          cv.notify_all();
        }
      } finish{m, cv, finished};
      for (std::size_t begin = 0; begin < ctx.todo.size() && !ctx.stop_requested(); begin += B * n) {
        for (std::size_t i = 0; i < n; ++i) {  // scatter: slice i gets B images of the global batch
          const std::size_t lo = std::min(begin + i * B, ctx.todo.size());
          const std::size_t hi = std::min(lo + B, ctx.todo.size());
          slices[i].seq = begin / B + i;
          load_batch(ctx.source, ctx.todo, lo, hi, ctx.input_size, slices[i], ctx.sink, ctx.metrics);
        }
        {
          TraceSpan barrier(SpanKind::wait_output);  // every device's slice of the step
          std::unique_lock<std::mutex> lk(m);
          pending = n;
          ++generation;
          cv.notify_all();
          cv.wait(lk, [&] { return pending == 0 || aborted; });
          if (aborted) return;
        }
        for (const auto& s : slices)  // gather, in input order
          if (s.n() > 0) deliver_batch(s, static_cast<int>(s.output.size() / s.indices.size()), ctx.sink, ctx.metrics);
      }
    };
    run_replicas(ctx, r);
  }
};

}  // namespace vecbench
