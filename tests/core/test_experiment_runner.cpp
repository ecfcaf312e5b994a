// The experiment runner's parts on the stub model: the planner (runs, ids, order), the scheduler
// (budget, stop, skip), the verifier (tolerance per engine and precision) and whole experiments
// through run_experiment (interleaving, budget, errors, external commands, summaries).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <sstream>

#include "vecbench/core/system/machine_load.hpp"
#include "vecbench/experiment/experiment_runner.hpp"
#include "vecbench/experiment/plan.hpp"
#include "vecbench/experiment/schedule.hpp"
#include "vecbench/experiment/validity.hpp"
#include "vecbench/experiment/verify.hpp"
#include "vecbench/testing/stub_model.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;
using vecbench::testing::stub_factory;
using vecbench::testing::StubOptions;

namespace {

/// A replica whose features are the stub's times (1 + scale): a model `scale` off the reference.
class ScaledModel : public Model {
 public:
  ScaledModel(std::unique_ptr<Model> m, double scale) : m_(std::move(m)), scale_(scale) {}
  int feature_dim() const override { return m_->feature_dim(); }
  int input_size() const override { return m_->input_size(); }
  ForwardTiming forward(const float* in, int n, float* out) override {
    const ForwardTiming t = m_->forward(in, n, out);
    for (int i = 0; i < n * feature_dim(); ++i) out[i] = static_cast<float>(out[i] * (1.0 + scale_));
    return t;
  }
  void warmup(int, int) override {}

 private:
  std::unique_ptr<Model> m_;
  double scale_;
};

Experiment experiment(nlohmann::json j) {
  if (!j.contains("name")) j["name"] = "t";
  if (!j.contains("images")) j["images"] = {{"synthetic", 12}};
  return parse_experiment(j, "test");
}

struct Env {
  ExperimentEnv env;
  std::ostringstream log;
  explicit Env(StubOptions o = {}, double off_reference = 0.0) {
    env.make_factory = [o, off_reference] {
      const ModelFactory f = stub_factory(o);
      if (off_reference == 0.0) return f;
      return ModelFactory([f, off_reference](const VirtualDevice& d) -> std::unique_ptr<Model> {
        return std::make_unique<ScaledModel>(f(d), off_reference);
      });
    };
    env.make_reference_factory = [] { return stub_factory(StubOptions{}); };
    env.make_source = [](ResizeMode) { return std::make_unique<SyntheticSource>(12); };
    env.input_size = 16;
    env.work_dir = vecbench::testing::fresh_temp_dir("runner") / "work";
    env.log = &log;
    env.cpu_cores = 2;
  }
};

const RunResult& run_named(const ResultFile& f, const std::string& strategy, int batch) {
  for (const auto& r : f.runs)
    if (r.params.strategy == strategy && r.params.batch == batch) return r;
  throw std::runtime_error("no run " + strategy);
}

}  // namespace

// ---- planner -----------------------------------------------------------------------------------
TEST(Planner, ExpandsMatricesDropsDuplicatesAndAppendsExternals) {
  const Experiment e =
      experiment({{"matrix",
                   {{{"strategy", {"sequential", "sharded"}}, {"devices", {"cpu/2"}}, {"batch", {1, 4}}},
                    {{"strategy", {"sharded"}}, {"devices", {"cpu/2"}}, {"batch", {4}}}}},
                  {"external", {{{"name", "peer"}, {"command", "true"}}}}});
  PlanInputs in;
  in.resolve_resize = [](std::optional<ResizeMode>) { return ResizeMode::tf_legacy; };
  in.input_kind = [](ResizeMode) { return SourceKind::synthetic; };
  const auto runs = plan_runs(e, in);
  ASSERT_EQ(runs.size(), 5u);  // 2 x 2 from the first matrix, the second's run is a duplicate, + peer
  EXPECT_EQ(runs[0].result.id, "strategy=sequential devices=cpu/2 batch=1 threads=0 resize=tf-legacy input=synthetic");
  EXPECT_EQ(runs[3].result.id, "strategy=sharded devices=cpu/2 batch=4 threads=0 resize=tf-legacy input=synthetic");
  EXPECT_FALSE(runs[3].external);
  ASSERT_TRUE(runs[4].external);
  EXPECT_EQ(*runs[4].external, 0u);
  EXPECT_EQ(runs[4].result.id, "strategy=external:peer");
}

// The planner hands the executor typed settings (RunParams), the result file their JSON.
TEST(Planner, EachMatrixRunCarriesItsTypedSettingsAndTheirJson) {
  const Experiment e = experiment(
      {{"matrix", {{"strategy", {"data-parallel"}}, {"devices", {"cpu/2"}}, {"batch", {4}}, {"threads", {1}}}}});
  PlanInputs in;
  in.resolve_resize = [](std::optional<ResizeMode>) { return ResizeMode::bilinear; };
  in.input_kind = [](ResizeMode) { return SourceKind::synthetic; };
  const auto runs = plan_runs(e, in);
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_TRUE(runs[0].matrix);
  const RunParams& p = *runs[0].matrix;
  EXPECT_EQ(p.strategy, &find_strategy("data-parallel"));
  ASSERT_EQ(p.devices.size(), 2u);
  EXPECT_EQ(p.devices[1].name(), "cpu/2#1");
  EXPECT_EQ(p.devices[0].threads, 1);
  EXPECT_EQ(p.batch, 4);
  EXPECT_EQ(p.resize, ResizeMode::bilinear);
  EXPECT_EQ(params_to_json(runs[0].result.params), params_to_json(p.recorded()));
  EXPECT_EQ(runs[0].result.params.text_of("devices"), "cpu/2");
  EXPECT_EQ(runs[0].result.params.batch, 4);
  EXPECT_EQ(runs[0].result.params.resize, ResizeMode::bilinear);
}

// A devices spec that cannot run fails the experiment before any run took its time: a bad
// spelling when the file is read (naming its place), a device this machine lacks when the plan
// is made (naming the run), never half-way through.
TEST(ExperimentRunner, ABadDevicesSpecFailsBeforeAnyRun) {
  try {
    experiment({{"matrix", {{"devices", {"cpu", "cpu/x"}}}}});
    FAIL() << "a bad devices spec was read";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("matrix.devices[1]"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("cpu/x"), std::string::npos) << err.what();
  }
  std::atomic<int> made{0};
  Env env;
  env.env.make_factory = [&made] { return stub_factory(StubOptions{}, &made); };
  env.env.cuda_devices = 0;
  const Experiment e = experiment({{"matrix", {{"strategy", {"sequential"}}, {"devices", {"cpu", "cuda:0"}}}}});
  try {
    run_experiment(e, env.env);
    FAIL() << "cuda:0 planned on a machine without CUDA";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("devices=cuda:0"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("no such CUDA device"), std::string::npos) << err.what();
  }
  EXPECT_EQ(made, 0) << "a run started before the bad spec was found";
  EXPECT_EQ(env.log.str().find("rep 1"), std::string::npos) << env.log.str();
}

TEST(Planner, OrderInterleavesRepetitionsOrGroupsThem) {
  const auto a = run_order(2, 3, true), b = run_order(2, 3, false);
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 6u);
  const std::vector<std::pair<std::size_t, int>> want_a = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2}};
  const std::vector<std::pair<std::size_t, int>> want_b = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(std::make_pair(a[i].run, a[i].rep), want_a[i]) << i;
    EXPECT_EQ(std::make_pair(b[i].run, b[i].rep), want_b[i]) << i;
  }
}

// ---- scheduler ---------------------------------------------------------------------------------
TEST(Scheduler, BudgetStopAndEndedRuns) {
  double now = 0;
  std::atomic<bool> stop{false};
  const Scheduler s(10.0, &stop, [&] { return now; });
  RunResult r;
  EXPECT_EQ(s.decide(r), StepAction::go);
  now = 10.5;
  EXPECT_EQ(s.decide(r), StepAction::budget);
  s.record(StepAction::budget, r, 1);
  EXPECT_EQ(r.status, RunStatus::skipped);
  EXPECT_EQ(r.reason, "time budget of 10 s exhausted before repetition 2");
  EXPECT_EQ(s.decide(r), StepAction::pass);  // ended: later steps do nothing
  RunResult q;
  now = 0;
  stop = true;
  EXPECT_EQ(s.decide(q), StepAction::interrupted);
  s.record(StepAction::interrupted, q, 0);
  EXPECT_EQ(q.reason, "interrupted");
  EXPECT_EQ(Scheduler(0, nullptr, [] { return 1e9; }).decide(RunResult{}), StepAction::go);  // no budget
  for (StepAction a : {StepAction::go, StepAction::pass, StepAction::interrupted, StepAction::budget})
    EXPECT_EQ(parse_step_action(to_string(a)), a);
  EXPECT_THROW(parse_step_action("later"), Error);
}

// ---- verifier ----------------------------------------------------------------------------------
TEST(Verifier, MeasuresPerImageRelativeL2) {
  MemorySink ref(2), got(2);
  const float r0[] = {3, 4}, g0[] = {3, 4.5f}, same[] = {1, 0};
  ref.on_features(0, r0, 2);
  got.on_features(0, g0, 2);  // |d| = 0.5, |ref| = 5
  ref.on_features(1, same, 2);
  got.on_features(1, same, 2);
  const Verification v = verify_features(got, ref);
  EXPECT_EQ(v.compared_images, 2);
  EXPECT_NEAR(v.max_abs_diff, 0.5, 1e-9);
  EXPECT_NEAR(v.max_rel_diff, 0.1, 1e-9);
}

TEST(Verifier, ToleranceDependsOnEngineAndPrecision) {
  EXPECT_DOUBLE_EQ(rel_tolerance(EngineKind::torchscript, Precision::fp32), 1e-4);
  EXPECT_DOUBLE_EQ(rel_tolerance(EngineKind::onednn, Precision::fp32), 1e-4);
  EXPECT_GT(rel_tolerance(EngineKind::onednn, Precision::bf16), 0.06);  // docs/engines.md: 2-6 % on real photos
  EXPECT_GT(rel_tolerance(EngineKind::torchscript, Precision::fp16),
            rel_tolerance(EngineKind::torchscript, Precision::fp32));
  EXPECT_FALSE(std::isfinite(rel_tolerance(EngineKind::none, Precision::fp32)));
  RunResult r;
  r.verification = Verification{"sequential", 3, 0.1, 2e-4, std::nullopt};
  EXPECT_FALSE(judge_verification(r, 1e-4));
  EXPECT_EQ(r.status, RunStatus::failed);
  EXPECT_NE(r.reason.find("0.0002 > tolerance 0.0001"), std::string::npos) << r.reason;
  ASSERT_TRUE(r.verification->rel_tolerance);
  RunResult within;
  within.verification = Verification{"sequential", 3, 0.0, 5e-5, std::nullopt};
  EXPECT_TRUE(judge_verification(within, 1e-4));
  EXPECT_EQ(within.status, RunStatus::ok);
}

// ---- whole experiments -------------------------------------------------------------------------
TEST(ExperimentRunner, InterleavesRepetitionsAndSummarizesEachRun) {
  Env t;
  const Experiment e = experiment({{"matrix", {{"strategy", {"sequential", "data-parallel"}}, {"devices", {"cpu/2"}}}},
                                   {"repetitions", 2},
                                   {"warmup_batches", 0}});
  const ResultFile f = run_experiment(e, t.env);
  ASSERT_EQ(f.runs.size(), 2u);
  for (const auto& r : f.runs) {
    EXPECT_EQ(r.status, RunStatus::ok) << r.reason;
    ASSERT_EQ(r.samples.size(), 2u);
    EXPECT_EQ(r.samples[0].images, 12);
    EXPECT_EQ(r.summary.images_per_s.count, 2u);
    ASSERT_TRUE(r.verification);
    EXPECT_EQ(r.verification->compared_images, 12);
    EXPECT_LT(r.verification->max_rel_diff, 1e-6);
    // Each run has its validity verdict, each repetition the machine's load while it ran, and the
    // verdict is what those figures give against the limits (docs/experiments.md "Validity"):
    // noisy exactly when one is over its limit, naming each (2 repetitions: the spread is the range).
    ASSERT_TRUE(r.validity);
    const ValidityLimits lim;
    double foreign = 0, steal = 0;
    for (const auto& s : r.samples) {
      foreign = std::max(foreign, s.foreign_cpu_share.value_or(0.0));
      steal = std::max(steal, s.steal_share.value_or(0.0));
    }
    std::vector<NoiseCause> over;
    if (r.summary.images_per_s.rel_spread > lim.max_rel_spread) over.push_back(NoiseCause::spread);
    if (foreign > lim.max_foreign_cpu) over.push_back(NoiseCause::foreign_cpu);
    if (steal > lim.max_steal) over.push_back(NoiseCause::steal);
    EXPECT_EQ(r.validity->causes, over) << r.validity->reason;
    EXPECT_EQ(r.validity->verdict, over.empty() ? ValidityVerdict::valid : ValidityVerdict::noisy);
    if (read_cpu_times())
      for (const auto& s : r.samples) {
        ASSERT_TRUE(s.foreign_cpu_share && s.steal_share);
        EXPECT_GE(*s.foreign_cpu_share, 0.0);
        EXPECT_LE(*s.foreign_cpu_share, 1.0);
      }
  }
  // A1 B1 A2 B2 in the log.
  const std::string log = t.log.str();
  const auto a1 = log.find("[1/4] strategy=sequential"), b1 = log.find("[2/4] strategy=data-parallel"),
             a2 = log.find("[3/4] strategy=sequential"), b2 = log.find("[4/4] strategy=data-parallel");
  ASSERT_NE(a1, std::string::npos) << log;
  EXPECT_LT(a1, b1);
  EXPECT_LT(b1, a2);
  EXPECT_LT(a2, b2);
  EXPECT_NE(b2, std::string::npos) << log;
  // The JSON of the typed result is a valid result file.
  EXPECT_NO_THROW(result_from_json(nlohmann::json(f), "runner"));
  EXPECT_NE(result_table(f).find("| data-parallel | cpu/2 | 1 | 0 |"), std::string::npos) << result_table(f);
}

TEST(ExperimentRunner, EachStepHandsOverTheResultAsItStandsForTheCallerToSave) {
  Env t;
  const Experiment e = experiment({{"matrix", {{"strategy", {"sequential", "data-parallel"}}, {"devices", {"cpu/2"}}}},
                                   {"repetitions", 2},
                                   {"warmup_batches", 0}});
  std::vector<ResultFile> saved;
  t.env.on_progress = [&](const ResultFile& f) { saved.push_back(f); };
  const ResultFile f = run_experiment(e, t.env);
  ASSERT_EQ(saved.size(), 4u);  // one per step: A1 B1 A2 B2
  // After the first step: A has its first sample, B is not run yet and says so.
  ASSERT_EQ(saved[0].runs.size(), 2u);
  EXPECT_EQ(saved[0].runs[0].status, RunStatus::ok);
  EXPECT_EQ(saved[0].runs[0].samples.size(), 1u);
  EXPECT_EQ(saved[0].runs[1].status, RunStatus::skipped);
  EXPECT_EQ(saved[0].runs[1].reason, kNotYetRun);
  EXPECT_TRUE(saved[0].runs[1].samples.empty());
  EXPECT_EQ(saved[1].runs[1].samples.size(), 1u);
  EXPECT_EQ(saved[2].runs[0].samples.size(), 2u);
  for (const auto& s : saved) EXPECT_NO_THROW(result_from_json(nlohmann::json(s), "partial"));
  // The last one is the result itself.
  EXPECT_EQ(nlohmann::json(saved.back())["runs"], nlohmann::json(f)["runs"]);
}

TEST(ExperimentRunner, KeepReplicasMakesEachRunsReplicasOnce) {
  for (const bool keep : {false, true}) {
    Env t;
    auto made = std::make_shared<std::atomic<int>>(0);
    t.env.make_factory = [made] {
      const ModelFactory f = stub_factory(StubOptions{});
      return ModelFactory([f, made](const VirtualDevice& d) {
        ++*made;
        return f(d);
      });
    };
    const Experiment e =
        experiment({{"matrix", {{"strategy", {"data-parallel", "sequential"}}, {"devices", "cpu/2"}, {"batch", {4}}}},
                    {"repetitions", 3},
                    {"warmup_batches", 1},
                    {"verify", false},
                    {"keep_replicas", keep}});
    const ResultFile f = run_experiment(e, t.env);
    ASSERT_EQ(f.runs.size(), 2u);
    for (const RunResult& r : f.runs) {
      EXPECT_EQ(r.status, RunStatus::ok) << r.reason;
      EXPECT_EQ(r.samples.size(), 3u);
    }
    // data-parallel on cpu/2: 2 replicas, sequential: 1; kept: once per run, else every repetition
    EXPECT_EQ(made->load(), keep ? 3 : 9) << "keep_replicas " << keep;
  }
}

TEST(ExperimentRunner, BudgetSkipsTheRepetitionsNotStartedInTime) {
  Env t;
  double now = 0;
  t.env.elapsed_s = [&] { return now += 4.0; };  // each decision is 4 s later: 4, 8, 12, ...
  const Experiment e = experiment({{"matrix", {{"strategy", {"sequential", "sharded"}}, {"devices", {"cpu/2"}}}},
                                   {"repetitions", 3},
                                   {"time_budget_s", 10},
                                   {"verify", false}});
  const ResultFile f = run_experiment(e, t.env);
  const RunResult &a = run_named(f, "sequential", 1), &b = run_named(f, "sharded", 1);
  EXPECT_EQ(a.samples.size(), 1u);  // A1 at 4 s, B1 at 8 s; A2 at 12 s is over the budget
  EXPECT_EQ(b.samples.size(), 1u);
  EXPECT_EQ(a.status, RunStatus::skipped);
  EXPECT_EQ(a.reason, "time budget of 10 s exhausted before repetition 2");
  EXPECT_EQ(b.status, RunStatus::skipped);
}

TEST(ExperimentRunner, StopRequestSkipsEverythingLeft) {
  Env t;
  std::atomic<bool> stop{true};
  t.env.stop = &stop;
  const ResultFile f = run_experiment(experiment({{"repetitions", 2}}), t.env);
  ASSERT_EQ(f.runs.size(), 1u);
  EXPECT_EQ(f.runs[0].status, RunStatus::skipped);
  EXPECT_EQ(f.runs[0].reason, "interrupted");
  EXPECT_TRUE(f.runs[0].samples.empty());
}

TEST(ExperimentRunner, AnErrorEndsItsRunOnlyAndLaterRepetitionsPass) {
  StubOptions bad;
  bad.fail_after_calls = 0;  // the first timed forward of every replica throws
  bad.fail_device = 1;       // ... of the second device only
  Env t(bad);
  const Experiment e = experiment(
      {{"matrix",
        {{{"strategy", {"sequential"}}, {"devices", {"cpu/2"}}}, {{"strategy", {"sharded"}}, {"devices", {"cpu/2"}}}}},
       {"repetitions", 2},
       {"verify", false}});
  const ResultFile f = run_experiment(e, t.env);
  const RunResult &seq = run_named(f, "sequential", 1), &sh = run_named(f, "sharded", 1);
  EXPECT_EQ(seq.status, RunStatus::ok) << seq.reason;  // sequential uses the first device only
  EXPECT_EQ(seq.samples.size(), 2u);
  EXPECT_EQ(sh.status, RunStatus::error);
  EXPECT_NE(sh.reason.find("failed on call 0"), std::string::npos) << sh.reason;
  EXPECT_TRUE(sh.samples.empty());
  EXPECT_EQ(t.log.str().find("[4/4]"), std::string::npos) << "the failed run's second repetition must not start";
}

TEST(ExperimentRunner, FeaturesOffTheReferenceFailTheRun) {
  Env off({}, 1e-3);  // every feature 0.1 % off: over fp32's 1e-4, within bf16's tolerance
  const Experiment fp32 =
      experiment({{"matrix", {{"strategy", {"data-parallel"}}, {"devices", {"cpu/2"}}}}, {"repetitions", 1}});
  const ResultFile f = run_experiment(fp32, off.env);
  ASSERT_EQ(f.runs.size(), 1u);
  EXPECT_EQ(f.runs[0].status, RunStatus::failed);
  ASSERT_TRUE(f.runs[0].verification);
  EXPECT_NEAR(f.runs[0].verification->max_rel_diff, 1e-3, 1e-5);
  EXPECT_EQ(f.runs[0].samples.size(), 1u);  // what it measured is kept
  Env off2({}, 1e-3);
  nlohmann::json bf16 = fp32.raw;
  bf16["precision"] = "bf16";
  const ResultFile g = run_experiment(experiment(bf16), off2.env);
  EXPECT_EQ(g.runs[0].status, RunStatus::ok) << g.runs[0].reason;
  EXPECT_DOUBLE_EQ(*g.runs[0].verification->rel_tolerance, rel_tolerance(EngineKind::torchscript, Precision::bf16));
}

TEST(ExperimentRunner, AnotherEngineOrPrecisionIsCheckedAgainstTheFp32TorchScriptReferenceNotItself) {
  // The matrix holds `sequential cpu batch 1`, but the experiment's engine and precision are not
  // the reference's: that run must not verify itself (and the others against it). The stub's
  // "engine" is 3 % off the reference factory's features, as bf16 is off fp32.
  for (const auto& [engine, precision] :
       {std::pair<std::string, std::string>{"onednn", "bf16"}, {"onednn", "fp32"}, {"torchscript", "bf16"}}) {
    Env t({}, 0.03);
    const Experiment e = experiment({{"engine", engine},
                                     {"precision", precision},
                                     {"matrix", {{"strategy", {"sequential", "data-parallel"}}, {"devices", {"cpu"}}}},
                                     {"repetitions", 1}});
    const ResultFile f = run_experiment(e, t.env);
    ASSERT_EQ(f.runs.size(), 2u);
    for (const auto& r : f.runs) {
      ASSERT_TRUE(r.verification) << r.id;
      EXPECT_NEAR(r.verification->max_rel_diff, 0.03, 1e-4) << engine << " " << precision << " " << r.id;
      EXPECT_EQ(r.verification->reference_engine, std::optional<std::string>("torchscript"));
      EXPECT_EQ(r.verification->reference_precision, std::optional<std::string>("fp32"));
      EXPECT_EQ(r.verification->reference_batch, std::optional<std::int64_t>(1));
      // fp32 allows 1e-4: 3 % off fails; bf16 allows 10 %.
      EXPECT_EQ(r.status, precision == "fp32" ? RunStatus::failed : RunStatus::ok) << r.id << " " << r.reason;
    }
    EXPECT_NE(t.log.str().find("reference pass (sequential, cpu, batch 1, torchscript fp32)"), std::string::npos)
        << t.log.str();
  }
  // A TorchScript fp32 matrix's own `sequential cpu batch 1` run is the reference: no extra pass.
  Env same;
  const ResultFile g =
      run_experiment(experiment({{"matrix", {{"strategy", {"sequential", "data-parallel"}}, {"devices", {"cpu"}}}},
                                 {"repetitions", 1}}),
                     same.env);
  EXPECT_EQ(same.log.str().find("reference pass"), std::string::npos) << same.log.str();
  for (const auto& r : g.runs) {
    EXPECT_EQ(r.status, RunStatus::ok) << r.reason;
    EXPECT_EQ(r.verification->reference_engine, std::optional<std::string>("torchscript"));
  }
}

TEST(ExperimentRunner, ExternalCommandsAreMeasuredOrSkippedWithTheReason) {
  Env t;
  const Experiment e = experiment({{"repetitions", 2},
                                   {"verify", false},
                                   {"external",
                                    {{{"name", "ok"}, {"command", "echo images=7; echo img_per_s=12.5"}},
                                     {{"name", "fails"}, {"command", "echo broken; exit 3"}},
                                     {{"name", "silent"}, {"command", "echo nothing"}}}}});
  const ResultFile f = run_experiment(e, t.env);
  ASSERT_EQ(f.runs.size(), 4u);
  const RunResult& ok = f.runs[1];
  EXPECT_EQ(ok.id, "strategy=external:ok");
  EXPECT_EQ(ok.status, RunStatus::ok);
  ASSERT_EQ(ok.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(ok.samples[0].images_per_s, 12.5);
  EXPECT_EQ(ok.samples[0].images, 7);
  EXPECT_DOUBLE_EQ(ok.summary.images_per_s.median, 12.5);
  EXPECT_EQ(f.runs[2].status, RunStatus::skipped);
  EXPECT_EQ(f.runs[2].reason, "exit status 3: broken ");
  EXPECT_EQ(f.runs[3].status, RunStatus::skipped);
  EXPECT_NE(f.runs[3].reason.find("no match for /img_per_s="), std::string::npos) << f.runs[3].reason;
  EXPECT_EQ(t.log.str().find("external:fails rep 2"), std::string::npos) << "a skipped peer is not run again";
}

// Adaptive repetitions (max_repetitions above repetitions): a steady peer stops once its median's
// interval is a 90 % one within the target (5 repetitions), a jumpy one runs to the maximum, a
// fixed count gets no stopping record; the budget ends the extra rounds without skipping runs.
TEST(ExperimentRunner, AdaptiveRepetitionsStopAtTheTargetTheMaximumOrTheBudget) {
  const auto dir = vecbench::testing::fresh_temp_dir("adaptive");
  const std::string counter = (dir / "n").string();
  const nlohmann::json peers = {
      {{"name", "steady"}, {"command", "echo img_per_s=10"}},
      {{"name", "jumpy"},
       {"command", "n=$(cat " + counter + " 2>/dev/null || echo 0); echo $((n+1)) > " + counter +
                       "; [ $((n % 2)) = 0 ] && echo img_per_s=10 || echo img_per_s=20"}}};
  Env t;
  const ResultFile f = run_experiment(
      experiment({{"repetitions", 2}, {"max_repetitions", 7}, {"verify", false}, {"external", peers}}), t.env);
  ASSERT_EQ(f.runs.size(), 3u);
  const RunResult &steady = f.runs[1], &jumpy = f.runs[2];
  ASSERT_EQ(steady.samples.size(), 5u) << t.log.str();
  ASSERT_TRUE(steady.stopping);
  EXPECT_EQ(steady.stopping->rule, "target");
  EXPECT_EQ(steady.stopping->min_repetitions, 2);
  EXPECT_EQ(steady.stopping->max_repetitions, 7);
  EXPECT_DOUBLE_EQ(steady.stopping->target_rel_half, 0.03);
  EXPECT_DOUBLE_EQ(steady.summary.images_per_s_median_ci->level, 1.0 - 2.0 / 32.0);
  EXPECT_EQ(jumpy.samples.size(), 7u);
  EXPECT_EQ(jumpy.stopping->rule, "max_repetitions");
  EXPECT_NE(t.log.str().find("rep 7/2+"), std::string::npos) << t.log.str();

  Env fixed;
  const ResultFile g =
      run_experiment(experiment({{"repetitions", 2}, {"verify", false}, {"external", peers}}), fixed.env);
  EXPECT_EQ(g.runs[2].samples.size(), 2u);
  EXPECT_FALSE(g.runs[2].stopping) << "a fixed count is not adaptive";

  Env budget;  // the clock passes the budget once the 2 x 3 fixed steps are decided
  auto calls = std::make_shared<int>(0);
  budget.env.elapsed_s = [calls] { return ++*calls <= 6 ? 0.0 : 1e9; };
  const ResultFile b = run_experiment(
      experiment(
          {{"repetitions", 2}, {"max_repetitions", 7}, {"time_budget_s", 100}, {"verify", false}, {"external", peers}}),
      budget.env);
  for (const RunResult& r : b.runs) {
    EXPECT_EQ(r.status, RunStatus::ok) << r.id << ": extra repetitions are optional";
    EXPECT_EQ(r.samples.size(), 2u) << r.id;
    EXPECT_EQ(r.stopping->rule, "time_budget") << r.id;
  }
  EXPECT_THROW(experiment({{"repetitions", 3}, {"max_repetitions", 2}}), ConfigError);
}
