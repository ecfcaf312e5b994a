// Trace spans (core/run/trace.hpp), their derived figures (core/run/trace_figures.hpp) and their Chrome
// trace-event JSON (results/trace_json.hpp), on the stub model: the figures tell a starved
// pipeline and serialized devices apart, and every strategy's trace file is valid trace-event
// JSON whose spans lie inside the run and count its images and batches.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "vecbench/experiment/experiment_runner.hpp"
#include "vecbench/results/trace_json.hpp"
#include "vecbench/strategies/runner.hpp"
#include "vecbench/testing/stub_model.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;
using vecbench::testing::stub_factory;
using vecbench::testing::StubOptions;

namespace {

// StageTimer records a Stage as the SpanKind of the same number: the first eight must agree.
static_assert(kStageCount == 8 && static_cast<int>(SpanKind::read) == static_cast<int>(Stage::read) &&
              static_cast<int>(SpanKind::forward) == static_cast<int>(Stage::forward) &&
              static_cast<int>(SpanKind::write) == static_cast<int>(Stage::write));

/// Synthetic images whose decoding sleeps: a decoder too slow for the devices.
class SleepySource : public SyntheticSource {
 public:
  SleepySource(std::size_t n, double sleep_s) : SyntheticSource(n), sleep_s_(sleep_s) {}
  void load(std::size_t i, int size, float* dst, StageTimes& t) const override {
    {
      StageTimer timer(t, Stage::read);
      std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s_));
    }
    SyntheticSource::load(i, size, dst, t);
  }

 private:
  double sleep_s_;
};

std::vector<VirtualDevice> trace_devs(const std::string& spec) {
  DeviceOptions o;
  o.cpu_cores = 4;
  return expand_devices(spec, o);
}

RunSettings traced(Trace& t, int batch, int decoders = 2) {
  RunSettings s;
  s.batch_size = batch;
  s.prefetch_batches = 2;
  s.decode_threads = decoders;
  s.warmup_batches = 1;
  s.trace = &t;
  return s;
}

struct TracedRun {
  RunStats stats;
  TraceFigures figures;
};

TracedRun traced_run(const std::string& strategy, const ImageSource& src, const std::string& spec, StubOptions o,
                     Trace& t, int batch, int decoders = 2) {
  MemorySink sink(src.size());
  TracedRun r;
  r.stats = run_strategy(strategy, src, all_indices(src.size()), trace_devs(spec), stub_factory(o), sink,
                         traced(t, batch, decoders), o.input_size);
  r.figures = trace_figures(t);
  return r;
}

}  // namespace

TEST(TraceSpans, RecordedOnlyWhereAThreadIsBound) {
  Trace t;
  trace_span(SpanKind::decode, 0, 10);  // not bound: nothing
  {
    TraceThread lane(&t, "a", 0);
    trace_batch(7, 3);
    { TraceSpan s(SpanKind::forward); }
    trace_span(SpanKind::decode, 100, 150);
    {
      TraceThread off(nullptr, "ignored");
      trace_span(SpanKind::decode, 0, 1);  // a null trace binds nothing, and keeps the outer lane
    }
    trace_span(SpanKind::write, 200, 260);
  }
  trace_span(SpanKind::write, 0, 1);  // unbound again
  ASSERT_EQ(t.lanes().size(), 1u);
  const auto& spans = t.lanes()[0].spans;
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[0].kind, SpanKind::forward);
  EXPECT_EQ(spans[0].batch, 7);
  EXPECT_EQ(spans[0].images, 3);
  EXPECT_GE(spans[0].dur_ns, 0);
  EXPECT_EQ(spans[1].images, 1);  // decode is per image
  EXPECT_EQ(spans[1].dur_ns, 50);
  EXPECT_EQ(spans[2].kind, SpanKind::decode);
  EXPECT_EQ(spans[3].images, 3);
  EXPECT_EQ(t.lane("a"), &t.lanes()[0]);  // a name is one lane
}

TEST(TraceDerivedFigures, OverlapAndSharesOfHandMadeSpans) {
  Trace t;
  t.set_devices({"d0", "d1"});
  t.add_window(0, 1000);
  TraceLane* a = t.lane("device 0", 0);
  TraceLane* b = t.lane("device 1", 1);
  a->add(SpanKind::forward, 0, 500);
  b->add(SpanKind::forward, 0, 500);  // side by side: 2 device-equivalents over [0, 500)
  a->add(SpanKind::wait_input, 500, 800);
  b->add(SpanKind::wait_output, 500, 600);
  b->add(SpanKind::forward, 600, 700);
  b->add(SpanKind::setup, -500, 0);  // before the window: no share
  const TraceFigures f = trace_figures(t);
  EXPECT_NEAR(f.wall_s, 1e-6, 1e-12);
  EXPECT_NEAR(f.forward_overlap, 1100.0 / 600.0, 1e-9);
  ASSERT_EQ(f.devices.size(), 2u);
  EXPECT_EQ(f.devices[1].name, "d1");
  EXPECT_NEAR(f.devices[0].busy, 0.5, 1e-9);
  EXPECT_NEAR(f.devices[0].starved, 0.3, 1e-9);
  EXPECT_NEAR(f.devices[1].busy, 0.6, 1e-9);
  EXPECT_NEAR(f.devices[1].blocked, 0.1, 1e-9);
  Trace serial;
  serial.lane("x", 0)->add(SpanKind::forward, 0, 10);
  serial.lane("y", 1)->add(SpanKind::forward, 10, 20);
  EXPECT_NEAR(trace_figures(serial).forward_overlap, 1.0, 1e-9);
}

TEST(TraceDerivedFigures, SleepingDecoderLeavesTheDevicesStarved) {
  StubOptions o;
  SleepySource src(24, 0.02);  // one decoder, 20 ms per image; the stub computes in well under 1 ms
  Trace t;
  const TracedRun r = traced_run("data-parallel", src, "cpu/2", o, t, 2, 1);
  EXPECT_EQ(r.stats.images_ok, src.size());
  ASSERT_EQ(r.figures.devices.size(), 2u);
  double starved = 0;
  for (const auto& d : r.figures.devices) {
    EXPECT_GT(d.starved, 0.6) << d.name;
    EXPECT_LT(d.busy, 0.2) << d.name;
    starved += d.starved;
  }
  EXPECT_GT(starved / 2, 0.7);
}

TEST(TraceDerivedFigures, NaiveSerializesTheDevicesDataParallelOverlapsThem) {
  StubOptions o;
  o.seconds_per_image = 0.01;
  SyntheticSource src(36);
  Trace naive;
  const TracedRun n = traced_run("naive", src, "cpu/3", o, naive, 2);
  EXPECT_GT(n.figures.forward_overlap, 0.9);
  EXPECT_LE(n.figures.forward_overlap, 1.1);
  Trace dp;
  const TracedRun d = traced_run("data-parallel", src, "cpu/2", o, dp, 2);
  EXPECT_GE(d.figures.forward_overlap, 1.6);
  EXPECT_LE(d.figures.forward_overlap, 2.0 + 1e-9);
}

class TraceFileTest : public ::testing::TestWithParam<std::string> {};

// The file is trace-event JSON: every span an "X" event with ts and dur, on a named thread,
// inside the run (setup before the clock start, the rest inside the timed window), and as many
// decode spans as images, forward spans as batches, write spans as delivered batches.
TEST_P(TraceFileTest, ValidChromeTraceWhoseSpansCountImagesAndBatches) {
  StubOptions o;
  SyntheticSource src(23);
  Trace t(0, "vecbench test");
  const TracedRun r = traced_run(GetParam(), src, GetParam() == "sequential" ? "cpu" : "cpu/2", o, t, 3);
  vecbench::testing::ScopedTempDir dir("trace_file");
  const auto path = dir.path / "t.json";
  save_trace(path, t);
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_TRUE(doc["traceEvents"].is_array());
  const double begin_us = doc["otherData"]["vecbench"]["run_begin_us"].get<double>();
  const double end_us = doc["otherData"]["vecbench"]["run_end_us"].get<double>();
  EXPECT_GT(end_us, begin_us);
  std::set<int> named;
  bool process_named = false;
  std::map<std::string, std::size_t> count;
  std::size_t batches = 0;
  for (const auto& d : r.stats.devices) batches += d.batches;
  for (const auto& e : doc["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name"));
    if (e["ph"] == "M") {
      if (e["name"] == "thread_name") named.insert(e["tid"].get<int>());
      if (e["name"] == "process_name") process_named = e["args"]["name"] == "vecbench test";
      continue;
    }
    ASSERT_EQ(e["ph"], "X");
    ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e.dump();
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    EXPECT_GE(ts, 0.0);
    EXPECT_GE(dur, 0.0);
    EXPECT_TRUE(named.count(e["tid"].get<int>())) << "unnamed tid " << e.dump();
    const std::string name = e["name"];
    if (name == "setup")
      EXPECT_LE(ts + dur, begin_us + 1.0) << e.dump();
    else
      EXPECT_TRUE(ts >= begin_us - 1.0 && ts + dur <= end_us + 1.0)
          << e.dump() << " not in run " << begin_us << ".." << end_us;
    EXPECT_TRUE(e["args"].contains("batch") && e["args"].contains("images"));
    ++count[name];
  }
  EXPECT_TRUE(process_named);
  EXPECT_EQ(count["decode"], src.size());
  EXPECT_EQ(count["forward"], batches);
  EXPECT_EQ(count["write"], batches);
  EXPECT_EQ(count["assemble"], batches);
  EXPECT_EQ(count["setup"], r.stats.devices.size());
  EXPECT_EQ(batches, (src.size() + 2) / 3);
  // Read back: the same figures.
  const auto back = load_traces(path);
  ASSERT_EQ(back.size(), 1u);
  const TraceFigures f = trace_figures(*back[0]);
  EXPECT_NEAR(f.forward_overlap, r.figures.forward_overlap, 0.01);
  ASSERT_EQ(f.devices.size(), r.figures.devices.size());
  for (std::size_t i = 0; i < f.devices.size(); ++i) {
    EXPECT_EQ(f.devices[i].name, r.figures.devices[i].name);
    EXPECT_NEAR(f.devices[i].busy, r.figures.devices[i].busy, 0.01);
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, TraceFileTest,
                         ::testing::Values("sequential", "naive", "sharded", "data-parallel", "mirrored"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(TraceFile, ReaderRejectsSpansWithoutTimes) {
  const auto doc = nlohmann::json::parse(R"({"traceEvents":[{"ph":"X","name":"forward","pid":0,"tid":1,"ts":3}]})");
  EXPECT_THROW(traces_from_chrome_json(doc, "t"), Error);
  EXPECT_THROW(traces_from_chrome_json(nlohmann::json::object(), "t"), Error);
}

// Device 1 fails on its second call. Each forward sleeps 5 ms per image, so device 0 alone
// would need ~200 ms for all 20 batches: device 1 gets its second batch however the
// data-parallel queue is shared, even on a loaded machine (with no delay, device 0 could take
// every batch before device 1 ran once, and nothing failed).
TEST(TraceSpans, AFailingReplicaEndsTheTracedRunWithoutDeadlock) {
  StubOptions o;
  o.fail_after_calls = 1;
  o.fail_device = 1;
  o.seconds_per_image = 0.005;
  SyntheticSource src(40);
  for (const std::string s : {"data-parallel", "mirrored", "sharded", "naive"}) {
    Trace t;
    MemorySink sink(src.size());
    EXPECT_THROW(run_strategy(s, src, all_indices(src.size()), trace_devs("cpu/2"), stub_factory(o), sink, traced(t, 2),
                              o.input_size),
                 ReplicaError)
        << s;
    EXPECT_GT(t.count(SpanKind::forward), 0u) << s;
  }
}

TEST(TraceExperiment, SamplesCarryFiguresAndTheFirstRepetitionsFile) {
  vecbench::testing::ScopedTempDir dir("trace_exp");
  ExperimentEnv env;
  std::ostringstream log;
  env.make_factory = [] { return stub_factory(StubOptions{}); };
  env.make_source = [](ResizeMode) { return std::make_unique<SyntheticSource>(12); };
  env.input_size = 16;
  env.work_dir = dir.path / "work";
  env.log = &log;
  env.cpu_cores = 2;
  env.trace_dir = dir.path / "stamp.traces";
  const Experiment e = parse_experiment({{"name", "t"},
                                         {"images", {{"synthetic", 12}}},
                                         {"repetitions", 2},
                                         {"verify", false},
                                         {"matrix", {{{"strategy", {"data-parallel"}}, {"devices", {"cpu/2"}}}}}},
                                        "test");
  const ResultFile f = run_experiment(e, env);
  ASSERT_EQ(f.runs.size(), 1u);
  ASSERT_EQ(f.runs[0].samples.size(), 2u);
  for (const Sample& s : f.runs[0].samples) {
    ASSERT_TRUE(s.trace.has_value());
    EXPECT_EQ(s.trace->devices.size(), 2u);
    EXPECT_GT(s.trace->forward_overlap, 0.0);
  }
  EXPECT_EQ(f.runs[0].samples[0].trace->file, "stamp.traces/run0.json");
  EXPECT_TRUE(f.runs[0].samples[1].trace->file.empty());
  EXPECT_EQ(load_traces(dir.path / f.runs[0].samples[0].trace->file).size(), 1u);
  // The figures survive the result file's JSON.
  const ResultFile back = result_from_json(nlohmann::json(f), "round trip");
  ASSERT_TRUE(back.runs[0].samples[0].trace.has_value());
  EXPECT_EQ(back.runs[0].samples[0].trace->file, "stamp.traces/run0.json");
  EXPECT_DOUBLE_EQ(back.runs[0].samples[0].trace->devices[1].busy, f.runs[0].samples[0].trace->devices[1].busy);
}
