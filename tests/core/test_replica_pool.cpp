// The replica pool: long-lived device workers that own their replicas across runs, run every
// job on the thread that made the replica, pass exceptions through futures, and shut down
// cleanly with work still queued.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <thread>

#include "vecbench/strategies/runner.hpp"
#include "vecbench/testing/stub_model.hpp"
#include "vecbench/testing/stub_reference.hpp"

using namespace vecbench;
using vecbench::testing::stub_factory;
using vecbench::testing::StubModel;
using vecbench::testing::StubOptions;

namespace {

const std::vector<std::string> kStrategies = {"sequential", "naive", "sharded", "data-parallel", "mirrored"};

RunSettings settings(int batch, int warmup = 1) {
  RunSettings s;
  s.batch_size = batch;
  s.prefetch_batches = 2;
  s.decode_threads = 2;
  s.warmup_batches = warmup;
  return s;
}

std::vector<VirtualDevice> devs(const std::string& spec) {
  DeviceOptions o;
  o.cpu_cores = 4;
  return expand_devices(spec, o);
}

/// What happened to the replicas of one pool, by device (virtual_index); guarded by `m`.
struct Journal {
  std::mutex m;
  std::map<int, std::thread::id> made_on;  ///< thread that made the replica
  std::map<int, std::thread::id> died_on;  ///< thread that destroyed it
  std::map<int, std::string> events;       ///< "W" per warm-up, "F" per forward, in order
  int forwards_elsewhere = 0;              ///< forwards not on the thread that made the replica
  void add(int dev, char e) {
    std::lock_guard<std::mutex> lk(m);
    events[dev] += e;
  }
};

/// A stub replica that reports to a Journal.
class JournalModel : public StubModel {
 public:
  JournalModel(const VirtualDevice& d, StubOptions o, Journal& j) : StubModel(d, o), dev_(d.virtual_index), j_(j) {}
  ~JournalModel() override {
    std::lock_guard<std::mutex> lk(j_.m);
    j_.died_on[dev_] = std::this_thread::get_id();
  }
  ForwardTiming forward(const float* in, int n, float* out) override {
    {
      std::lock_guard<std::mutex> lk(j_.m);
      if (j_.made_on[dev_] != std::this_thread::get_id()) ++j_.forwards_elsewhere;
    }
    j_.add(dev_, 'F');
    return StubModel::forward(in, n, out);
  }
  void warmup(int, int) override { j_.add(dev_, 'W'); }

 private:
  int dev_;     ///< virtual_index of the device
  Journal& j_;  ///< where to report
};

ModelFactory journal_factory(StubOptions o, Journal& j, std::atomic<int>* made, double load_s = 0) {
  return [o, &j, made, load_s](const VirtualDevice& d) -> std::unique_ptr<Model> {
    if (load_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(load_s));
    {
      std::lock_guard<std::mutex> lk(j.m);
      j.made_on[d.virtual_index] = std::this_thread::get_id();
    }
    if (made) ++*made;
    return std::make_unique<JournalModel>(d, o, j);
  };
}

/// Runs `f` in another thread; fails the test (instead of hanging it) if it takes over `s` seconds.
template <class F>
void within_seconds(double s, F f) {
  auto fut = std::async(std::launch::async, std::move(f));
  if (fut.wait_for(std::chrono::duration<double>(s)) != std::future_status::ready) {
    std::cerr << "deadlock: not done within " << s << " s\n";
    std::abort();
  }
  fut.get();
}

}  // namespace

TEST(ReplicaPool, MakesEachReplicaOnceAcrossRunsOfEveryStrategy) {
  const StubOptions o;
  SyntheticSource src(29);
  const auto ref = vecbench::testing::stub_reference(src, o);
  std::atomic<int> made{0};
  ReplicaPool pool(devs("cpu/3"), stub_factory(o, &made));
  EXPECT_EQ(made, 0);  // nothing is made before a job asks
  for (int round = 0; round < 2; ++round)
    for (const auto& strategy : kStrategies) {
      SCOPED_TRACE(strategy);
      MemorySink got(src.size());
      const RunStats st =
          run_strategy(strategy, src, all_indices(src.size()), pool, got, settings(round + 2), o.input_size);
      EXPECT_EQ(st.images_ok, src.size());
      for (std::size_t i = 0; i < src.size(); ++i) {
        ASSERT_EQ(got.times_seen(i), 1) << i;
        ASSERT_EQ(got.features(i), ref->features(i)) << i;
      }
      if (strategy == "sequential" && round == 0) {
        EXPECT_EQ(made, 1);  // sequential uses the first device only
      }
    }
  EXPECT_EQ(made, 3);
}

TEST(ReplicaPool, ReplicaIsMadeRunAndDestroyedOnItsWorkersThread) {
  Journal j;
  std::atomic<int> made{0};
  SyntheticSource src(17);
  {
    ReplicaPool pool(devs("cpu/3"), journal_factory(StubOptions{}, j, &made));
    for (const auto& strategy : kStrategies) {
      MemorySink got(src.size());
      run_strategy(strategy, src, all_indices(src.size()), pool, got, settings(2), 16);
    }
    ASSERT_EQ(j.made_on.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(j.made_on[static_cast<int>(i)], pool.worker(i).thread_id()) << i;
      EXPECT_NE(pool.worker(i).thread_id(), std::this_thread::get_id());
      for (std::size_t k = 0; k < i; ++k) EXPECT_NE(pool.worker(i).thread_id(), pool.worker(k).thread_id());
      const std::thread::id on = pool.worker(i).submit([](Replica&) { return std::this_thread::get_id(); }).get();
      EXPECT_EQ(on, pool.worker(i).thread_id());
    }
  }
  EXPECT_EQ(made, 3);
  EXPECT_EQ(j.forwards_elsewhere, 0);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(j.died_on[i], j.made_on[i]) << i;
}

TEST(ReplicaPool, WarmUpIsPerRunBeforeTheClockAndLoadingOnlyOnce) {
  Journal j;
  std::atomic<int> made{0};
  SyntheticSource src(4);
  ReplicaPool pool(devs("cpu/2"), journal_factory(StubOptions{}, j, &made, 0.2));
  MemorySink a(src.size()), b(src.size()), c(src.size());
  const RunStats first = run_strategy("sharded", src, all_indices(src.size()), pool, a, settings(1, 3), 16);
  const RunStats second = run_strategy("sharded", src, all_indices(src.size()), pool, b, settings(1, 3), 16);
  run_strategy("sharded", src, all_indices(src.size()), pool, c, settings(1, 0), 16);  // vectorize: no warm-up
  EXPECT_EQ(made, 2);             // the replicas were kept: loaded once
  EXPECT_GE(first.setup_s, 0.2);  // loading (a 0.2 s sleep, never shorter) counts as setup, before the clock
  for (int d = 0; d < 2; ++d) EXPECT_EQ(j.events[d], "WFFWFFFF") << d;  // 2 inputs per device per run
}

TEST(DeviceWorker, JobExceptionReachesItsFutureAndTheWorkerGoesOn) {
  DeviceWorker w(devs("cpu")[0], std::make_shared<const ModelFactory>(stub_factory(StubOptions{})));
  auto bad = w.submit([](Replica&) -> int { throw ReplicaError("job failed on purpose"); });
  auto good = w.submit([](Replica& r) { return r.model().feature_dim(); });
  try {
    bad.get();
    FAIL() << "expected the job's error";
  } catch (const ReplicaError& e) {
    EXPECT_STREQ(e.what(), "job failed on purpose");
  }
  EXPECT_EQ(good.get(), 8);
}

TEST(ReplicaPool, OneFailingWorkerReachesTheCallerAndTheOthersFinish) {
  StubOptions o;
  o.fail_after_calls = 2;
  o.fail_device = 1;
  o.seconds_per_image = 0.001;
  SyntheticSource src(120);
  auto pool = std::make_unique<ReplicaPool>(devs("cpu/3"), stub_factory(o));
  for (const std::string strategy : {"naive", "sharded", "data-parallel", "mirrored"}) {
    SCOPED_TRACE(strategy);
    MemorySink got(src.size());
    within_seconds(60, [&] {
      try {
        run_strategy(strategy, src, all_indices(src.size()), *pool, got, settings(2), o.input_size);
        ADD_FAILURE() << "expected the replica's error";
      } catch (const ReplicaError& e) {
        EXPECT_NE(std::string(e.what()).find("failed on call 2"), std::string::npos) << e.what();
      }
    });
    for (std::size_t i = 0; i < pool->size(); ++i)  // every worker is free again
      within_seconds(10, [&] { pool->worker(i).submit([](Replica&) {}).get(); });
  }
  within_seconds(10, [&] { pool.reset(); });  // shutdown joins every worker
}

TEST(ReplicaPool, ReplicaFailingToLoadFailsEveryRunAndNothingHangs) {
  StubOptions o;
  o.fail_on_load = true;
  o.fail_device = 2;
  SyntheticSource src(10);
  ReplicaPool pool(devs("cpu/3"), stub_factory(o));
  for (const auto& strategy : kStrategies) {
    MemorySink got(src.size());
    within_seconds(30, [&] {
      if (strategy == "sequential") {  // device 0 only: loads fine
        EXPECT_EQ(run_strategy(strategy, src, all_indices(src.size()), pool, got, settings(1), 16).images_ok, 10u);
      } else {
        EXPECT_THROW(run_strategy(strategy, src, all_indices(src.size()), pool, got, settings(1), 16), ReplicaError)
            << strategy;
      }
    });
  }
}

TEST(DeviceWorker, ShutdownRunsQueuedJobsDropsTheReplicaAndRefusesNewJobs) {
  Journal j;
  DeviceWorker w(devs("cpu")[0], std::make_shared<const ModelFactory>(journal_factory(StubOptions{}, j, nullptr)));
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<int> order;  // only the worker thread writes it
  std::vector<std::future<void>> done;
  done.push_back(w.submit([&](Replica& r) {
    r.model();
    released.wait();
    order.push_back(1);
  }));
  for (int k = 2; k <= 4; ++k) done.push_back(w.submit([&, k](Replica& r) { order.push_back(r.loaded() ? k : -k); }));
  std::atomic<bool> shut{false};
  std::thread closer([&] {
    w.shutdown();
    shut = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(shut);  // shutdown waits for the queued jobs
  release.set_value();
  closer.join();
  EXPECT_TRUE(shut);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));  // every queued job ran, in order, on the replica
  for (auto& f : done) EXPECT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(j.died_on[0], j.made_on[0]);  // destroyed on the worker thread
  EXPECT_THROW(w.submit([](Replica&) {}), ReplicaError);
  w.shutdown();  // idempotent
}
