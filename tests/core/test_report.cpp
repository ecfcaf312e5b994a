// Reports: device counts, sequential references, report.md tables and values on the golden
// base file, plots (when /usr/bin/python3 has matplotlib) and skipped plots.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "build_paths.hpp"
#include "vecbench/results/report.hpp"
#include "vecbench/results/trace_json.hpp"
#include "vecbench/strategies/runner.hpp"
#include "vecbench/testing/stub_model.hpp"
#include "vecbench/testing/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace vecbench;

namespace {

const fs::path kSource = VECBENCH_SOURCE_DIR;
const std::string kPlotScript = (kSource / "tools" / "plot_results.py").string();
const std::string kTail = " batch=1 threads=1 resize=tf-legacy input=files";

std::string python() {
  const std::string p = VECBENCH_PYTHON;
  return p.empty() ? "/usr/bin/python3" : p;
}

using TempDir = vecbench::testing::ScopedTempDir;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string report_for(const std::vector<ResultFile>& rs, const TempDir& dir, const std::string& py) {
  write_report(rs, dir.path, py, kPlotScript);
  return slurp(dir.path / "report.md");
}

ResultFile golden_base() { return load_result(kSource / "tests" / "data" / "compare" / "base.json"); }

}  // namespace

TEST(ReportDevices, DeviceCountFromTheRecordedSpec) {
  // what a result file's "devices" counts on the machine that ran it (the same parser as the run)
  const auto count = [](const std::string& spec, int gpus) {
    vecbench::ResultParams p;
    if (const std::string why = vecbench::read_param(p, "devices", spec); !why.empty()) return -1;
    return device_count(p, gpus);
  };
  EXPECT_EQ(count("cpu", 0), 1);
  EXPECT_EQ(count("cpu/3", 0), 3);
  EXPECT_EQ(count("cuda:0/3", 1), 3);
  EXPECT_EQ(count("cuda:0,cuda:1", 2), 2);
  EXPECT_EQ(count("cpu/2,cuda:0", 1), 3);
  EXPECT_EQ(count("cpu / 2", 0), 2);  // spaces as the run itself reads them
  EXPECT_EQ(count("cuda", 4), 4);     // every GPU of the machine that ran it
  EXPECT_EQ(count("cpu/x", 0), -1);   // refused as the file is read
  EXPECT_EQ(count("", 0), -1);
  EXPECT_EQ(device_count(vecbench::ResultParams{}, 4), 0);  // not recorded
}

TEST(ReportDevices, BestSequentialRunWithSameBatch) {
  ResultFile f = golden_base();
  f.runs[1].summary.images_per_s.median = 11.0;  // threads=2 now the best batch=1 sequential run
  EXPECT_EQ(best_sequential_run(f, f.runs[2]), &f.runs[1]);
  f.runs[2].params.batch = 8;  // no sequential run with batch=8
  EXPECT_EQ(best_sequential_run(f, f.runs[2]), nullptr);
  f.runs[2].params.batch.reset();  // unconstrained
  EXPECT_EQ(best_sequential_run(f, f.runs[2]), &f.runs[1]);
}

TEST(ReportMarkdown, TablesSpeedupEfficiencyAndStages) {
  TempDir dir("report_tables");
  const std::string md = report_for({golden_base()}, dir, "/nonexistent/python3");
  // Plots are skipped with the reason, not an error.
  EXPECT_NE(md.find("Plots skipped: cannot start /nonexistent/python3 "), std::string::npos) << md;
  // Metadata.
  EXPECT_NE(md.find("host: `ref-box`; CPU: Golden CPU @ 3.0GHz (8 cores); GPUs: none"), std::string::npos) << md;
  EXPECT_NE(md.find("libtorch 1.13.1"), std::string::npos);
  EXPECT_NE(md.find("model: arch tf2015, weights seed:0"), std::string::npos);
  // Synthetic weights are said to be so, with the way to real ones.
  EXPECT_NE(md.find("- **synthetic weights (seed 0): not Inception's trained features; for real ones export a model "
                    "with tools/export_inception.py --from-tf"),
            std::string::npos)
      << md;
  // Scaling tables: speedup over the best batch=1 sequential run (10 img/s), efficiency.
  EXPECT_NE(md.find("### Scaling: `data-parallel`"), std::string::npos);
  EXPECT_NE(md.find("| devices | config | img/s median (min-max) | speedup | vs | efficiency | "
                    "verification | status |"),
            std::string::npos);
  EXPECT_NE(md.find("| 2 (cpu/2) |" + kTail +
                    " | 18.00 (17.80-18.20) | 1.80x | S1 | 0.90 | vs sequential: 40 images, "
                    "max abs 0, max rel 0 | ok |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 4 (cpu/4) |" + kTail + " | 30.00 (29.70-30.30) | 3.00x | S1 | 0.75 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 (cpu/2) |" + kTail +
                    " | 15.00 (14.80-15.20) | 1.50x | S1 | 0.75 | vs sequential: 40 images, "
                    "max abs 1.2e-07, max rel 3.6e-07 | ok |"),
            std::string::npos)
      << md;
  // The external command is listed beside the best matrix run (cpu/4, 30 img/s), not as a scaling series.
  EXPECT_NE(md.find("| `torchserve` | 12.00 (11.80-12.20) | 0.40x | ok |"), std::string::npos) << md;
  EXPECT_NE(md.find("- S1: `strategy=sequential devices=cpu" + kTail + "` (10.00 img/s)"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0.95x | S1 | 0.95 |"), std::string::npos) << md;  // the slower sequential run
  // Skipped and failed runs keep their reason.
  EXPECT_NE(md.find("| n/a | n/a | none | n/a | n/a | skipped: no CUDA device available |"), std::string::npos) << md;
  EXPECT_NE(md.find("| error: replica 5: std::bad_alloc while loading the model |"), std::string::npos) << md;
  // Stage breakdown in ms per image.
  EXPECT_NE(md.find("| run | read | decode | resize | assemble | h2d | forward | d2h | write | total |"),
            std::string::npos);
  EXPECT_NE(md.find("| `strategy=sequential devices=cpu" + kTail +
                    "` | 5.00 | 30.00 | 10.00 | 1.00 | 0.00 | 50.00 | 0.00 | 4.00 | 100.00 |"),
            std::string::npos)
      << md;
  // The plot data is a loadable result file.
  EXPECT_EQ(load_result(dir.path / "plot_data" / "0_golden.json").runs.size(), 8u);
}

TEST(ReportMarkdown, SpeedupUsesTheBestSequentialRunOfTheSameBatch) {
  ResultFile f;
  f.name = "batches";
  auto add = [&](const std::string& strategy, const std::string& devices, int batch, double ips) {
    RunResult r;
    r.params.strategy = strategy;
    r.params.devices = DevicesSpec::parse(devices);
    r.params.batch = batch;
    r.id = "strategy=" + strategy + " devices=" + devices + " batch=" + std::to_string(batch);
    for (int i = 0; i < 3; ++i) r.samples.push_back(Sample{i, 10, 0, 10 / ips, ips, {}, {}, {}, {}, 0});
    summarize_run(r);
    f.runs.push_back(r);
  };
  add("sequential", "cpu", 1, 10);
  add("sequential", "cpu", 8, 20);
  add("data-parallel", "cpu/2", 8, 30);
  add("data-parallel", "cpu/4", 1, 36);
  TempDir dir("report_batches");
  const std::string md = report_for({f}, dir, "");
  EXPECT_NE(md.find("Plots skipped: no python interpreter configured"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 (cpu/2) | batch=8 | 30.00 (30.00-30.00) | 1.50x | S2 | 0.75 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 4 (cpu/4) | batch=1 | 36.00 (36.00-36.00) | 3.60x | S1 | 0.90 |"), std::string::npos) << md;
  EXPECT_NE(md.find("- S2: `strategy=sequential devices=cpu batch=8` (20.00 img/s)"), std::string::npos) << md;
  EXPECT_NE(md.find("No run recorded stage times."), std::string::npos);
}

TEST(ReportPlots, PngsWhenMatplotlibIsAvailable) {
  if (run_program({python(), "-c", "import matplotlib"}, "/dev/null") != 0)
    GTEST_SKIP() << python() << " cannot import matplotlib";
  TempDir dir("report_plots");
  ResultFile other = golden_base();
  other.meta.host = "other-box";
  const std::string md = report_for({golden_base(), other}, dir, python());
  EXPECT_NE(md.find("![Throughput vs devices](throughput_vs_devices.png)"), std::string::npos) << md;
  EXPECT_NE(md.find("![Stage time per image](stage_times.png)"), std::string::npos) << md;
  for (const char* png : {"throughput_vs_devices.png", "stage_times.png"}) {
    SCOPED_TRACE(png);
    ASSERT_TRUE(fs::is_regular_file(dir.path / png)) << slurp(dir.path / "plot.log");
    EXPECT_EQ(slurp(dir.path / png).substr(0, 8), "\x89PNG\r\n\x1a\n");
  }
}

// Traced runs: the trace figures table, a timeline per traced run and naive above data-parallel
// on one time axis, pictures first; the trace files are found relative to the result file.
TEST(ReportPlots, TimelinesOfTracedRuns) {
  if (run_program({python(), "-c", "import matplotlib"}, "/dev/null") != 0)
    GTEST_SKIP() << python() << " cannot import matplotlib";
  TempDir src_dir("report_traces_src"), dir("report_traces");
  ResultFile f = golden_base();
  f.runs[0].params.strategy = "naive";
  ASSERT_EQ(f.runs[2].params.strategy, "data-parallel");
  for (std::size_t ri : {std::size_t{0}, std::size_t{2}}) {
    Trace t;
    vecbench::testing::StubOptions o;
    o.seconds_per_image = 0.002;
    SyntheticSource images(12);
    MemorySink sink(images.size());
    RunSettings s;
    s.batch_size = 2;
    s.trace = &t;
    DeviceOptions d;
    d.cpu_cores = 2;
    run_strategy(ri == 0 ? "naive" : "data-parallel", images, all_indices(images.size()), expand_devices("cpu/2", d),
                 vecbench::testing::stub_factory(o), sink, s, o.input_size);
    const std::string name = "r.traces/run" + std::to_string(ri) + ".json";
    save_trace(src_dir.path / name, t);
    f.runs[ri].samples[0].trace = trace_figures(t);
    f.runs[ri].samples[0].trace->file = name;
  }
  write_report({f}, dir.path, python(), kPlotScript, {src_dir.path / "r.json"});
  const std::string md = slurp(dir.path / "report.md");
  for (const char* png : {"timelines/0_0.png", "timelines/0_2.png", "timeline_compare_0.png"}) {
    SCOPED_TRACE(png);
    ASSERT_TRUE(fs::is_regular_file(dir.path / png)) << slurp(dir.path / "plot.log");
    EXPECT_EQ(slurp(dir.path / png).substr(0, 8), "\x89PNG\r\n\x1a\n");
    EXPECT_NE(md.find(png), std::string::npos) << md;
  }
  EXPECT_LT(md.find("timeline_compare_0.png"), md.find("throughput_vs_devices.png"));
  EXPECT_NE(md.find("### Trace figures"), std::string::npos) << md;
  // linked relative to the report: ../<src dir>/r.traces/run0.json
  EXPECT_NE(md.find("[trace](../" + src_dir.path.filename().string() + "/r.traces/run0.json)"), std::string::npos)
      << md;
  EXPECT_FALSE(fs::is_regular_file(dir.path / "timelines" / "0_1.png"));  // run 1 was not traced
}

TEST(ReportMarkdown, NoResultFiles) {
  TempDir dir("report_empty");
  const std::string md = report_for({}, dir, python());
  EXPECT_NE(md.find("Plots skipped: no result files"), std::string::npos) << md;
}

TEST(ReportPlots, FailingPlotScriptOnlySkipsThePlots) {
  TempDir dir("report_noplots");
  const std::string md = report_for({golden_base()}, dir, "/bin/false");
  EXPECT_NE(md.find("Plots skipped: /bin/false " + kPlotScript + " failed (exit 1)"), std::string::npos) << md;
  EXPECT_FALSE(fs::exists(dir.path / "throughput_vs_devices.png"));
  EXPECT_NE(md.find("### Scaling: `data-parallel`"), std::string::npos);
}

TEST(ReportMarkdown, ExternalCommandsGetTheirOwnTableBesideTheBestRun) {
  ResultFile f;
  f.name = "peers";
  auto add = [&](const std::string& strategy, const std::string& devices, double ips, RunStatus st, std::string why) {
    RunResult r;
    ASSERT_EQ(read_param(r.params, "strategy", strategy), "");
    if (!devices.empty()) r.params.devices = DevicesSpec::parse(devices);  // "": a peer command has none
    r.id = "strategy=" + strategy;
    r.status = st;
    r.reason = std::move(why);
    if (st == RunStatus::ok)
      for (int i = 0; i < 3; ++i) r.samples.push_back(Sample{i, 10, 0, 10 / (ips + i), ips + i, {}, {}, {}, {}, 0});
    summarize_run(r);
    f.runs.push_back(r);
  };
  add("sequential", "cpu", 10, RunStatus::ok, "");
  add("data-parallel", "cpu/2", 20, RunStatus::ok, "");
  add("external:onnxruntime-b8", "", 15, RunStatus::ok, "");
  add("external:dataloader", "", 12, RunStatus::ok, "");
  add("external:missing-peer", "", 0, RunStatus::skipped, "command not found");
  TempDir dir("report_externals");
  const std::string md = report_for({f}, dir, "");
  EXPECT_EQ(md.find("### Scaling: `external:"), std::string::npos) << md;  // not a scaling series
  const auto at = md.find("### Beside other tools");
  ASSERT_NE(at, std::string::npos) << md;
  // fastest first, as a ratio of the best matrix run (data-parallel: median 21)
  const auto ort = md.find("| `onnxruntime-b8` | 16.00 (15.00-17.00) | 0.76x | ok |", at);
  const auto dl = md.find("| `dataloader` | 13.00 (12.00-14.00) | 0.62x | ok |", at);
  const auto miss = md.find("| `missing-peer` | n/a | n/a | skipped: command not found |", at);
  EXPECT_NE(ort, std::string::npos) << md;
  EXPECT_NE(dl, std::string::npos) << md;
  EXPECT_NE(miss, std::string::npos) << md;
  EXPECT_LT(ort, dl);
  EXPECT_LT(dl, miss);
  EXPECT_NE(md.find("Best matrix run: `strategy=data-parallel` (21.00 img/s)."), std::string::npos) << md;
}

// The report's environment lines: how the binary was built, the CPU's ISA and what each engine's
// kernels chose, the machine's load and how many runs were noisy.
TEST(Report, EnvironmentLinesSayTheBuildTheKernelsAndTheLoad) {
  ResultFile f = golden_base();
  EXPECT_EQ(detail::environment_markdown(f), "") << "older files have no record";
  Environment e;
  e.build_type = "Release";
  e.compiler_flags = "-O3";
  e.binary_git_sha = "abc123";
  e.cpu_isa = {"avx2", "avx512f"};
  e.load_avg_before = {0.25, 0.5, 1.0};
  e.engine_isa = {{"torchscript", "AVX2"}, {"onednn", "avx512_core"}, {"onednn_winograd", "onednn"}};
  f.meta.environment = e;
  f.runs[0].validity = Validity{ValidityVerdict::noisy, "spread 20 %", {NoiseCause::spread}};
  f.runs[0].samples[0].foreign_cpu_share = 0.125;
  const std::string md = detail::environment_markdown(f);
  EXPECT_NE(md.find("- build: Release (-O3), binary abc123; CPU ISA: avx2, avx512f; kernels: onednn avx512_core, "
                    "onednn_winograd onednn, torchscript AVX2\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("other processes took at most 12.5 % of the CPU"), std::string::npos) << md;
  EXPECT_NE(md.find("load average 0.25 / 0.50 / 1.00 before, unknown after"), std::string::npos) << md;
  EXPECT_NE(md.find("validity: 1 of 1 runs noisy"), std::string::npos) << md;
}
