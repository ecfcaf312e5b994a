#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "vecbench/engine/null_model.hpp"
#include "vecbench/strategies/runner.hpp"
#include "vecbench/testing/stub_model.hpp"
#include "vecbench/testing/stub_reference.hpp"

using namespace vecbench;
using vecbench::testing::ConcurrencyGauge;
using vecbench::testing::stub_factory;
using vecbench::testing::StubOptions;

namespace {

// A source whose listed inputs fail to load.
class FlakySource : public SyntheticSource {
 public:
  FlakySource(std::size_t n, std::vector<std::size_t> bad) : SyntheticSource(n), bad_(std::move(bad)) {}
  void load(std::size_t i, int size, float* dst, StageTimes& t) const override {
    if (std::find(bad_.begin(), bad_.end(), i) != bad_.end()) throw InputError(name(i), "injected failure");
    SyntheticSource::load(i, size, dst, t);
  }

 private:
  std::vector<std::size_t> bad_;
};

RunSettings settings(int batch) {
  RunSettings s;
  s.batch_size = batch;
  s.prefetch_batches = 2;
  s.decode_threads = 2;
  s.warmup_batches = 1;
  return s;
}

std::vector<VirtualDevice> devs(const std::string& spec) {
  DeviceOptions o;
  o.cpu_cores = 4;
  return expand_devices(spec, o);
}

// Host memory that records what it gave out: the stand-in for the CUDA engine's pinned memory.
class CountingMemory : public HostMemory {
 public:
  void* allocate(std::size_t bytes) override {
    void* p = ::operator new(bytes);
    std::lock_guard<std::mutex> lk(m_);
    live_[p] = bytes;
    ++allocations_;
    return p;
  }
  void deallocate(void* p, std::size_t bytes) noexcept override {
    std::lock_guard<std::mutex> lk(m_);
    auto it = live_.find(p);
    if (it == live_.end() || it->second != bytes) ++bad_frees_;
    if (it != live_.end()) live_.erase(it);
    ::operator delete(p);
  }
  const char* name() const override { return "counting"; }
  void reserve(std::size_t count, std::size_t bytes) override {
    std::lock_guard<std::mutex> lk(m_);
    reserved_.emplace_back(count, bytes);
  }
  std::vector<std::pair<std::size_t, std::size_t>> reserved() const {
    std::lock_guard<std::mutex> lk(m_);
    return reserved_;
  }
  /// Whether [p, p + bytes) lies in one block given out and not yet freed.
  bool owns(const void* p, std::size_t bytes) const {
    std::lock_guard<std::mutex> lk(m_);
    auto it = live_.upper_bound(const_cast<void*>(p));
    if (it == live_.begin()) return false;
    --it;
    const auto* base = static_cast<const char*>(it->first);
    return static_cast<const char*>(p) >= base && static_cast<const char*>(p) + bytes <= base + it->second;
  }
  std::size_t allocations() const {
    std::lock_guard<std::mutex> lk(m_);
    return allocations_;
  }
  std::size_t live() const {
    std::lock_guard<std::mutex> lk(m_);
    return live_.size();
  }
  std::size_t bad_frees() const {
    std::lock_guard<std::mutex> lk(m_);
    return bad_frees_;
  }

 private:
  mutable std::mutex m_;
  std::map<void*, std::size_t> live_;
  std::size_t allocations_ = 0, bad_frees_ = 0;
  std::vector<std::pair<std::size_t, std::size_t>> reserved_;
};

// A stub replica that counts the forwards whose input lies in `memory`.
class MemoryCheckingStub : public vecbench::testing::StubModel {
 public:
  MemoryCheckingStub(const VirtualDevice& d, StubOptions o, const CountingMemory& memory, std::atomic<int>& in_memory,
                     std::atomic<int>& elsewhere)
      : StubModel(d, o), memory_(memory), in_memory_(in_memory), elsewhere_(elsewhere) {}
  ForwardTiming forward(const float* in, int n, float* out) override {
    const std::size_t bytes = static_cast<std::size_t>(n) * 3 * input_size() * input_size() * sizeof(float);
    ++(memory_.owns(in, bytes) ? in_memory_ : elsewhere_);
    return StubModel::forward(in, n, out);
  }

 private:
  const CountingMemory& memory_;
  std::atomic<int>& in_memory_;
  std::atomic<int>& elsewhere_;
};

}  // namespace

class StrategyTest : public ::testing::TestWithParam<std::string> {};

// RunSettings::host_memory (pinned memory on a CUDA run): every batch a replica gets lies in it,
// the features are those of ordinary memory, every block is freed by the memory it came from,
// and the run allocates about as many buffers as it has batches in flight, not one a batch.
TEST_P(StrategyTest, BatchesLiveInTheRunsHostMemoryAndAreReused) {
  const StubOptions o;
  SyntheticSource src(61);
  const auto ref = vecbench::testing::stub_reference(src, o);
  CountingMemory memory;
  std::atomic<int> in_memory{0}, elsewhere{0};
  auto factory = [&](const VirtualDevice& d) -> std::unique_ptr<Model> {
    return std::make_unique<MemoryCheckingStub>(d, o, memory, in_memory, elsewhere);
  };
  RunSettings s = settings(2);  // 31 batches
  s.host_memory = &memory;
  MemorySink got(src.size());
  run_strategy(GetParam(), src, all_indices(src.size()), devs("cpu/2"), factory, got, s, o.input_size);
  for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(got.features(i), ref->features(i)) << GetParam() << " " << i;
  EXPECT_GE(in_memory.load(), 31) << GetParam();
  EXPECT_EQ(elsewhere.load(), 0) << GetParam();
  // in flight at most: 2 ready + 4 done + 2 forwarding + 2 decoding (data-parallel); one a replica otherwise
  EXPECT_LE(memory.allocations(), 12u) << GetParam();
  EXPECT_EQ(memory.live(), 0u) << GetParam();
  EXPECT_EQ(memory.bad_frees(), 0u) << GetParam();
  // the run asked for its buffers before its clock, at its batch's size
  const auto r = memory.reserved();
  ASSERT_EQ(r.size(), 1u) << GetParam();
  EXPECT_GE(r[0].first, GetParam() == "data-parallel" ? 4u : 1u) << GetParam();  // data-parallel: 2 ready + 2 done
  EXPECT_EQ(r[0].second, 2u * 3 * o.input_size * o.input_size * sizeof(float)) << GetParam();
}

TEST_P(StrategyTest, SameFeaturesAsSequentialEveryImageOnce) {
  const StubOptions o;
  SyntheticSource src(37);
  const auto ref = vecbench::testing::stub_reference(src, o);
  for (int batch : {1, 4}) {
    MemorySink got(src.size());
    const RunStats st = run_strategy(GetParam(), src, all_indices(src.size()), devs("cpu/3"), stub_factory(o), got,
                                     settings(batch), o.input_size);
    EXPECT_EQ(st.images_ok, src.size());
    EXPECT_EQ(st.images_failed, 0u);
    for (std::size_t i = 0; i < src.size(); ++i) {
      ASSERT_EQ(got.times_seen(i), 1) << GetParam() << " input " << i;
      ASSERT_EQ(got.features(i), ref->features(i)) << GetParam() << " input " << i;  // bit-identical
    }
  }
}

TEST_P(StrategyTest, FailingImagesAreReportedAndSkipped) {
  const StubOptions o;
  FlakySource src(20, {0, 7, 19});
  MemorySink got(src.size());
  const RunStats st = run_strategy(GetParam(), src, all_indices(src.size()), devs("cpu/2"), stub_factory(o), got,
                                   settings(3), o.input_size);
  EXPECT_EQ(st.images_ok, 17u);
  EXPECT_EQ(st.images_failed, 3u);
  for (std::size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(got.times_seen(i), 1);
    const bool bad = i == 0 || i == 7 || i == 19;
    EXPECT_EQ(got.error(i).empty(), !bad) << i;
    if (bad) {
      EXPECT_NE(got.error(i).find("synthetic:" + std::to_string(i)), std::string::npos);
      EXPECT_NE(got.error(i).find("injected failure"), std::string::npos);
    }
  }
}

TEST_P(StrategyTest, FailingReplicaStopsCleanlyWithItsError) {
  StubOptions o;
  o.fail_after_calls = 2;
  o.fail_device = 1;
  SyntheticSource src(200);
  MemorySink got(src.size());
  const std::string spec = GetParam() == "sequential" ? "cpu" : "cpu/3";
  if (GetParam() == "sequential") o.fail_device = 0;
  try {
    run_strategy(GetParam(), src, all_indices(src.size()), devs(spec), stub_factory(o), got, settings(2), o.input_size);
    FAIL() << "expected the replica's error";
  } catch (const ReplicaError& e) {
    EXPECT_NE(std::string(e.what()).find("failed on call 2"), std::string::npos) << e.what();
  }
}

TEST_P(StrategyTest, ReplicaFailingToLoadStopsCleanly) {
  StubOptions o;
  o.fail_on_load = true;
  o.fail_device = GetParam() == "sequential" ? 0 : 2;
  SyntheticSource src(10);
  MemorySink got(src.size());
  const std::string spec = GetParam() == "sequential" ? "cpu" : "cpu/3";
  EXPECT_THROW(run_strategy(GetParam(), src, all_indices(src.size()), devs(spec), stub_factory(o), got, settings(1),
                            o.input_size),
               ReplicaError);
}

namespace {
/// Passes results on and raises the stop flag when the `after`-th image has been delivered: the
/// stop comes at a counted point of the run, not after a sleep that a loaded machine stretches.
class StopAfterSink : public ResultSink {
 public:
  StopAfterSink(ResultSink& inner, std::size_t after, std::atomic<bool>& stop)
      : inner_(inner), after_(after), stop_(stop) {}
  void on_features(std::size_t index, const float* f, int dim) override {
    inner_.on_features(index, f, dim);
    if (++delivered_ == after_) stop_ = true;
  }
  void on_error(std::size_t index, const std::string& message) override { inner_.on_error(index, message); }

 private:
  ResultSink& inner_;
  const std::size_t after_;
  std::atomic<bool>& stop_;
  std::atomic<std::size_t> delivered_{0};
};
}  // namespace

// The stop flag, raised after the 8th delivered image: the run ends early, and whatever was in
// flight then is delivered, each image once (what the queues hold is far below the 400 inputs).
TEST_P(StrategyTest, StopFlagDrainsWhatIsInFlight) {
  StubOptions o;
  SyntheticSource src(400);
  MemorySink got(src.size());
  std::atomic<bool> stop{false};
  StopAfterSink stopper(got, 8, stop);
  RunSettings s = settings(2);
  s.stop = &stop;
  const RunStats st =
      run_strategy(GetParam(), src, all_indices(src.size()), devs("cpu/2"), stub_factory(o), stopper, s, o.input_size);
  EXPECT_TRUE(stop);
  EXPECT_GE(st.images_ok, 8u);
  EXPECT_LT(st.images_ok, src.size());
  std::size_t delivered = 0;
  for (std::size_t i = 0; i < src.size(); ++i) {
    EXPECT_LE(got.times_seen(i), 1);
    delivered += static_cast<std::size_t>(got.times_seen(i));
  }
  EXPECT_EQ(delivered, st.images_ok);
}

TEST_P(StrategyTest, MetricsAreFilled) {
  StubOptions o;
  o.seconds_per_image = 0.001;
  SyntheticSource src(24);
  MemorySink got(src.size());
  const RunStats st = run_strategy(GetParam(), src, all_indices(src.size()), devs("cpu/2"), stub_factory(o), got,
                                   settings(4), o.input_size);
  EXPECT_GT(st.wall_s, 0.0);
  EXPECT_GT(st.images_per_s(), 0.0);
  EXPECT_GT(st.stages[Stage::decode], 0.0);
  EXPECT_GT(st.stages[Stage::forward], 0.0);
  std::size_t dev_images = 0;
  for (const auto& d : st.devices) dev_images += d.images;
  EXPECT_EQ(dev_images, src.size());
  EXPECT_FALSE(st.batch_latency_ms.empty());
  EXPECT_GT(st.latency_percentile_ms(99), 0.0);
  EXPECT_GT(st.peak_rss_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(All, StrategyTest,
                         ::testing::Values("naive", "sequential", "sharded", "data-parallel", "mirrored"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(DataParallel, ReplicasOverlapAndNaiveNeverDoes) {
  // The seed's question as counts, not wall times (a loaded machine stretches a sleeping
  // replica's run, not its overlap): data-parallel's 4 replicas have forwards in flight at once;
  // naive's never do (each blocking call waits for the one before: the seed's mistake).
  StubOptions o;
  o.seconds_per_image = 0.008;
  SyntheticSource src(32);
  for (const char* strategy : {"data-parallel", "naive", "sequential"}) {
    MemorySink sink(src.size());
    StubOptions so = o;
    so.gauge = std::make_shared<ConcurrencyGauge>();
    const auto st = run_strategy(strategy, src, all_indices(src.size()), devs(strategy[0] == 's' ? "cpu" : "cpu/4"),
                                 stub_factory(so), sink, settings(2), o.input_size);
    EXPECT_EQ(st.images_ok, src.size()) << strategy;
    EXPECT_EQ(so.gauge->now.load(), 0) << strategy;
    if (std::string(strategy) == "data-parallel")
      EXPECT_GE(so.gauge->peak.load(), 2) << "data-parallel's replicas never overlapped";
    else
      EXPECT_EQ(so.gauge->peak.load(), 1) << strategy << " ran two forwards at once";
  }
}

TEST(NullModel, RunsThePipelineAloneWithZeroFeaturesAndFailuresStillReported) {
  // `--engine none`: every input goes through loading and batching once, features are zeros,
  // and a bad input is still reported (the pipeline, not the model, finds it).
  FlakySource src(11, {4});
  for (const std::string strategy : {"sequential", "data-parallel", "sharded"}) {
    MemorySink sink(src.size());
    const auto st =
        run_strategy(strategy, src, all_indices(src.size()), devs(strategy == "sequential" ? "cpu" : "cpu/2"),
                     null_factory(6, 16), sink, settings(3), 16);
    EXPECT_EQ(st.images_failed, 1u) << strategy;
    for (std::size_t i = 0; i < src.size(); ++i) {
      if (i == 4) {
        EXPECT_NE(sink.error(i).find("injected failure"), std::string::npos) << strategy;
        continue;
      }
      ASSERT_EQ(sink.features(i).size(), 6u) << strategy << " image " << i;
      for (float v : sink.features(i)) EXPECT_EQ(v, 0.0f);
    }
  }
}

namespace {
// Counts the inputs loaded; a thread can wait for the first.
class CountingSource : public SyntheticSource {
 public:
  using SyntheticSource::SyntheticSource;
  void load(std::size_t i, int size, float* dst, StageTimes& t) const override {
    SyntheticSource::load(i, size, dst, t);
    std::lock_guard<std::mutex> lk(m_);
    ++loaded_;
    cv_.notify_all();
  }
  /// The count once at least one input is loaded, or after `limit` (0 then).
  int wait_for_first(std::chrono::seconds limit) const {
    std::unique_lock<std::mutex> lk(m_);
    cv_.wait_for(lk, limit, [&] { return loaded_ > 0; });
    return loaded_;
  }
  int loaded() const {
    std::lock_guard<std::mutex> lk(m_);
    return loaded_;
  }

 private:
  mutable std::mutex m_;
  mutable std::condition_variable cv_;
  mutable int loaded_ = 0;
};
}  // namespace

// vectorize's data-parallel run (overlap_setup): the decoders fill the queue while the replicas
// build, so the first batches are ready when they are; benchmarks (the default) start decoding
// only with the clock. The features are the same either way. Told by the order of events, not by
// wall times (a loaded machine delays any thread): with overlap, each replica's set-up waits for
// the first input to be loaded, which only a decoder running during the set-up can do (60 s
// bound: a run without overlap fails the test, it does not hang it); without, each set-up counts
// the inputs loaded when it ends, none since decoding starts after it.
TEST(DataParallel, DecodingOverlapsTheReplicasSetUpOnlyWhenAsked) {
  for (const bool overlap : {true, false}) {
    CountingSource src(12);
    std::mutex m;
    std::vector<int> loaded_at_setup;
    StubOptions o;
    o.on_prepare = [&] {
      const int n = overlap ? src.wait_for_first(std::chrono::seconds(60)) : src.loaded();
      std::lock_guard<std::mutex> lk(m);
      loaded_at_setup.push_back(n);
    };
    MemorySink got(src.size()), want(src.size());
    RunSettings s = settings(2);
    s.overlap_setup = overlap;
    s.prefetch_batches = 4;
    run_strategy("data-parallel", src, all_indices(src.size()), devs("cpu/2"), stub_factory(o), got, s, o.input_size);
    ASSERT_EQ(loaded_at_setup.size(), 2u) << "overlap " << overlap;
    for (int n : loaded_at_setup)
      EXPECT_EQ(n > 0, overlap) << "overlap " << overlap << ": " << n << " inputs loaded when a replica was ready";
    StubOptions quick;
    run_strategy("sequential", SyntheticSource(12), all_indices(12), devs("cpu"), stub_factory(quick), want,
                 settings(1), o.input_size);
    for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(got.features(i), want.features(i)) << i;
  }
}

// A replica that fails to build while the decoders already run ends the run with its error:
// no deadlock on the full queue, no thread left behind.
TEST(DataParallel, AReplicaFailingToBuildWhileDecodingEndsTheRunCleanly) {
  StubOptions o;
  o.prepare_s = 0.05;
  o.fail_in_prepare = true;
  o.fail_device = 1;
  SyntheticSource src(64);
  MemorySink got(src.size());
  RunSettings s = settings(2);
  s.overlap_setup = true;
  s.prefetch_batches = 1;
  try {
    run_strategy("data-parallel", src, all_indices(src.size()), devs("cpu/2"), stub_factory(o), got, s, o.input_size);
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("failed to build"), std::string::npos) << e.what();
  }
}

namespace {
// A source whose loads take time: decoding is the bottleneck of a run on a fast stub model.
class SlowSource : public SyntheticSource {
 public:
  SlowSource(std::size_t n, double s) : SyntheticSource(n), s_(s) {}
  void load(std::size_t i, int size, float* dst, StageTimes& t) const override {
    std::this_thread::sleep_for(std::chrono::duration<double>(s_));
    SyntheticSource::load(i, size, dst, t);
  }

 private:
  double s_;
};
}  // namespace

// When the devices wait for input, the balancer adds decode threads (up to max_decode_threads);
// without a maximum the count stays as asked; the features are the same.
TEST(DataParallel, DecodeThreadsGrowWhileTheDevicesWaitForInput) {
  StubOptions o;
  MemorySink want(120);
  run_strategy("sequential", SyntheticSource(120), all_indices(120), devs("cpu"), stub_factory(o), want, settings(1),
               o.input_size);
  for (const int max : {4, 0}) {
    SlowSource src(120, 0.01);  // 1.2 s of decoding on one thread
    MemorySink got(src.size());
    RunSettings s = settings(2);
    s.decode_threads = 1;
    s.max_decode_threads = max;
    const RunStats st = run_strategy("data-parallel", src, all_indices(src.size()), devs("cpu/2"), stub_factory(o), got,
                                     s, o.input_size);
    if (max > 0) {
      EXPECT_GT(st.decode_threads, 1u) << "the devices starved, yet no decode thread was added";
      EXPECT_LE(st.decode_threads, 4u);
    } else {
      EXPECT_EQ(st.decode_threads, 1u);
    }
    for (std::size_t i = 0; i < src.size(); ++i) EXPECT_EQ(got.features(i), want.features(i)) << i;
  }
}
