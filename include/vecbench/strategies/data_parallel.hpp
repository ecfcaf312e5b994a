// `data-parallel`: the pipeline that makes N devices faster than one. A decode pool fills a
// bounded queue of ready batches (prefetch depth); one worker per device pulls the next batch
// whenever it is free (dynamic load balance); a writer delivers results. Decode, copy, compute
// and writing overlap. On CUDA each replica copies on its own stream from pinned memory.
#pragma once
#include <optional>
#include <thread>

#include "vecbench/core/queue.hpp"
#include "vecbench/pipeline/threaded.hpp"

namespace vecbench {

class DataParallelStrategy : public Strategy {
 public:
  std::string name() const override { return "data-parallel"; }
  void run(RunContext& ctx) override {
    const std::size_t B = static_cast<std::size_t>(std::max(1, ctx.settings.batch_size));
    const std::size_t n_batches = (ctx.todo.size() + B - 1) / B;
    const std::size_t n_workers = ctx.devices.size();
    const int n_decoders = std::max(1, ctx.settings.decode_threads);
    BoundedQueue<Batch> ready(static_cast<std::size_t>(std::max(1, ctx.settings.prefetch_batches)));
    BoundedQueue<Batch> done(ready.capacity() + n_workers);
    std::atomic<std::size_t> next{0};
    std::atomic<int> decoders_left{n_decoders};
    std::atomic<std::size_t> workers_left{n_workers};
    std::atomic<bool> aborted{false};
    auto abort_all = [&] {
      aborted = true;
      ready.abort();
      done.abort();
    };

    ReplicaRun r;
    r.on_abort = abort_all;
    r.coordinator_lane = "writer";
    r.worker = [&](std::size_t i, Model& m) {
      for (;;) {
        std::optional<Batch> b;
        {
          TraceSpan starved(SpanKind::wait_input);
          b = ready.pop();
        }
        if (!b) break;
        ctx.metrics.sample_queue(ready.size());
        forward_batch(m, *b, i, ctx.metrics);
        TraceSpan blocked(SpanKind::wait_output);
        if (!done.push(std::move(*b))) break;
      }
      if (--workers_left == 0) done.close();
    };
    ErrorCollector errors;  // the decoders' and the writer's
    std::vector<std::thread> decoders;
    struct Join {  // on every way out of run(): the decoders may have started in the prelude
      std::vector<std::thread>& t;
      ~Join() {
        for (auto& d : t)
          if (d.joinable()) d.join();
      }
    } join{decoders};
    auto start_decoders = [&] {
      if (!decoders.empty()) return;
      for (int d = 0; d < n_decoders; ++d)
        decoders.emplace_back([&, d] {
          TraceThread lane(ctx.settings.trace, "decoder " + std::to_string(d));
          try {
            decode_batches(ctx, B, n_batches, next, ready, aborted);
          } catch (...) {
            errors.capture();
            abort_all();
          }
          if (--decoders_left == 0) ready.close();
        });
    };
    r.prelude = start_decoders;  // vectorize: decoding fills the queue while the replicas build
    r.coordinator = [&] {
      start_decoders();
      try {
        for (;;) {
          std::optional<Batch> b;
          {
            TraceSpan starved(SpanKind::wait_input);
            b = done.pop();
          }
          if (!b) break;
          deliver_batch(*b, static_cast<int>(b->output.size() / std::max<std::size_t>(1, b->indices.size())), ctx.sink,
                        ctx.metrics);
        }
      } catch (...) {
        errors.capture();
        abort_all();
      }
      for (auto& t : decoders) t.join();
      errors.rethrow_if_any();
    };
    run_replicas(ctx, r);  // a replica that fails aborts the queues, so the decoders end and Join joins them
  }

 private:
  /// One decoder thread's work: batch k = next++ loaded and queued, until none is left, the run
  /// stops or the queue is aborted.
  static void decode_batches(RunContext& ctx, std::size_t B, std::size_t n_batches, std::atomic<std::size_t>& next,
                             BoundedQueue<Batch>& ready, const std::atomic<bool>& aborted) {
    for (;;) {
      if (aborted || ctx.stop_requested()) return;
      const std::size_t k = next++;
      if (k >= n_batches) return;
      Batch b;
      b.seq = k;
      load_batch(ctx.source, ctx.todo, k * B, std::min((k + 1) * B, ctx.todo.size()), ctx.input_size, b, ctx.sink,
                 ctx.metrics);
      if (b.n() == 0) continue;
      TraceSpan blocked(SpanKind::wait_output);
      if (!ready.push(std::move(b))) return;
      ctx.metrics.sample_queue(ready.size());
    }
  }
};

}  // namespace vecbench
