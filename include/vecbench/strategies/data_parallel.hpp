// `data-parallel`: the pipeline that makes N devices faster than one. A decode pool fills a
// bounded queue of ready batches (prefetch depth); one worker per device pulls the next batch
// whenever it is free (dynamic load balance); a writer delivers results. Decode, copy, compute
// and writing overlap. On CUDA each replica copies on its own stream from pinned memory.
#pragma once
#include <algorithm>
#include <optional>
#include <thread>

#include "vecbench/core/run/queue.hpp"
#include "vecbench/pipeline/decode_pool.hpp"
#include "vecbench/pipeline/threaded.hpp"

namespace vecbench {

class DataParallelStrategy : public Strategy {
 public:
  std::string name() const override { return "data-parallel"; }
  /// The ready queue, the done queue (the ready queue's depth and one a worker) and one a decoder.
  std::size_t batches_in_flight(const RunSettings& s, std::size_t devices) const override {
    const std::size_t ready = ready_depth(s);
    return ready + (ready + devices) + static_cast<std::size_t>(std::max({1, s.decode_threads, s.max_decode_threads}));
  }
  void run(RunContext& ctx) override {
    const std::size_t B = static_cast<std::size_t>(std::max(1, ctx.settings.batch_size));
    const std::size_t n_batches = (ctx.todo.size() + B - 1) / B;
    const std::size_t n_workers = ctx.devices.size();
    const int n_decoders = std::max(1, ctx.settings.decode_threads);
    BoundedQueue<Batch> ready(ready_depth(ctx.settings));
    BoundedQueue<Batch> done(ready.capacity() + n_workers);
    // delivered batches go back to the decoders: input buffers (pinned on CUDA) made once per run
    BatchRecycler recycler(ctx.settings.host_memory, batches_in_flight(ctx.settings, n_workers));
    std::atomic<std::size_t> next{0};
    std::atomic<std::int64_t> starved_ns{0};  // the workers' summed wait for input (the balancer reads it)
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
          const auto t0 = Clock::now();
          b = ready.pop();
          starved_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
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
    DecodePool decoders(
        [&](int d) {
          TraceThread lane(ctx.settings.trace, "decoder " + std::to_string(d));
          try {
            decode_batches(ctx, B, n_batches, next, ready, recycler, aborted);
          } catch (...) {
            errors.capture();
            abort_all();
          }
        },
        [&] { ready.close(); });
    auto start_decoders = [&] {
      while (decoders.started() < n_decoders && decoders.add()) {
      }
    };
    r.prelude = start_decoders;  // vectorize: decoding fills the queue while the replicas build
    r.coordinator = [&] {
      start_decoders();
      {
        DecodeBalancer balance(  // more decoders while the devices wait for input (vectorize)
            decoders, starved_ns, n_workers, ctx.settings.max_decode_threads,
            [&] { return next.load() < n_batches && !aborted; });
        try {
          write_results(ctx, done, recycler);
        } catch (...) {
          errors.capture();
          abort_all();
        }
      }
      decoders.join();  // the balancer has stopped: no decoder starts any more
      ctx.metrics.set_decode_threads(static_cast<std::size_t>(decoders.started()));
      errors.rethrow_if_any();
    };
    run_replicas(ctx, r);  // a replica that fails aborts the queues: the decoders end, the pool joins them
  }

 private:
  /// Decoded batches waiting for a worker, at most.
  static std::size_t ready_depth(const RunSettings& s) {
    return static_cast<std::size_t>(std::max(1, s.prefetch_batches));
  }
  /// The writer: delivers every forwarded batch until the workers are done.
  static void write_results(RunContext& ctx, BoundedQueue<Batch>& done, BatchRecycler& recycler) {
    for (;;) {
      std::optional<Batch> b;
      {
        TraceSpan starved(SpanKind::wait_input);
        b = done.pop();
      }
      if (!b) return;
      deliver_batch(*b, static_cast<int>(b->output.size() / std::max<std::size_t>(1, b->indices.size())), ctx.sink,
                    ctx.metrics);
      recycler.give(std::move(*b));
    }
  }
  /// One decoder thread's work: batch k = next++ loaded and queued, until none is left, the run
  /// stops or the queue is aborted.
  static void decode_batches(RunContext& ctx, std::size_t B, std::size_t n_batches, std::atomic<std::size_t>& next,
                             BoundedQueue<Batch>& ready, BatchRecycler& recycler, const std::atomic<bool>& aborted) {
    for (;;) {
      if (aborted || ctx.stop_requested()) return;
      const std::size_t k = next++;
      if (k >= n_batches) return;
      Batch b = recycler.take();
      b.seq = k;
      load_batch(ctx.source, ctx.todo, k * B, std::min((k + 1) * B, ctx.todo.size()), ctx.input_size, b, ctx.sink,
                 ctx.metrics);
      if (b.n() == 0) {
        recycler.give(std::move(b));
        continue;
      }
      TraceSpan blocked(SpanKind::wait_output);
      if (!ready.push(std::move(b))) return;
      ctx.metrics.sample_queue(ready.size());
    }
  }
};

}  // namespace vecbench
