// `vecbench run` (an experiment file) and `vecbench tune` (a search over routes), on the
// experiment runner (experiment/experiment_runner.hpp) with LibTorch/oneDNN replicas.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "vecbench/app/build_info.hpp"
#include "vecbench/app/commands.hpp"
#include "vecbench/app/route.hpp"
#include "vecbench/core/base/strategy_name.hpp"
#include "vecbench/core/base/weight_source.hpp"
#include "vecbench/core/system/machine_load.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/experiment/experiment_runner.hpp"
#include "vecbench/input/inputs.hpp"
#include "vecbench/results/meta.hpp"
#include "vecbench/results/result.hpp"
#include "vecbench_version.hpp"
#ifdef VECBENCH_WITH_OPENCV
#include "vecbench/input/opencv_plugin.hpp"
#endif

namespace vecbench {
namespace {

/// The embedded default experiment (experiments/quick.json at build time).
const char* const kQuickExperiment =
#include "quick_experiment.inc"
    ;

nlohmann::json full_meta(int argc, char** argv, const std::string& model) {
  const BuildInfo build = build_info();
  nlohmann::json m = base_meta(argc, argv, VECBENCH_VERSION, build.git_sha, build.git_dirty);
  Environment env;
  env.build_type = build.build_type;
  env.compiler_flags = build.compiler_flags;
  env.binary_git_sha = build.git_sha;
  env.binary_git_dirty = build.git_dirty;
  env.cpu_isa = cpu_isa();
  env.load_avg_before = load_average();
  const auto b = backend_info();
  if (b.contains("aten_cpu_capability")) env.engine_isa["torchscript"] = b["aten_cpu_capability"].get<std::string>();
  if (b.contains("onednn")) {
    env.engine_isa["onednn"] = b["onednn"].value("isa", std::string("unknown"));
    env.engine_isa["onednn_winograd"] = b["onednn"].value("winograd_impl", std::string("unknown"));
  }
  m["environment"] = env;
  m["gpus"] = b["gpus"];
  m["versions"] = {{"libtorch", b["libtorch"]},
                   {"cuda", b["cuda"]},
                   {"cudnn", b["cudnn"]},
#ifdef VECBENCH_WITH_OPENCV
                   {"opencv", VECBENCH_OPENCV_VERSION},
#else
                   {"opencv", nullptr},
#endif
                   {"compiler", VECBENCH_COMPILER}};
  m["parallel_info"] = b["parallel_info"];
  if (b.contains("onednn")) {
    m["versions"]["onednn"] = b["onednn"]["version"];
    m["onednn"] = b["onednn"];  // the ISA oneDNN runs with, and whether it has Winograd convolutions
  }
  auto mm = read_model_meta(model);
  mm["path"] = model;
  const std::string note = WeightSource::parse(mm.value("weight_source", std::string())).note();
  if (!note.empty()) mm["weights_note"] = note;
  m["model"] = mm;
  return m;
}

std::unique_ptr<ImageSource> experiment_source(const ImageSetSpec& im, ResizeMode mode) {
  InputOptions in;
  in.resize = mode;
  if (im.synthetic) return std::make_unique<SyntheticSource>(im.synthetic);
  if (!im.predecoded.empty()) return make_source(im.predecoded, in);
  if (!im.dir.empty()) return make_source(im.dir, in);
  if (!im.list.empty()) return make_source(im.list, in);
#ifdef VECBENCH_WITH_OPENCV
  return make_source(opencv_plugin().generate_image_set(im.generate), in);
#else
  throw ConfigError("images.generate", "needs OpenCV, which this build lacks");
#endif
}

/// One experiment run by `vecbench run` or `vecbench tune`: its result (whole on rank 0), where
/// it was saved, and the command's exit status (the same on every rank).
struct ExperimentOutcome {
  ResultFile result;
  fs::path path;      ///< the saved result file (rank 0 / each shard)
  int exit_code = 0;  ///< 0 ok, 1 a run in error or failed verification, 130 interrupted
};

ExperimentOutcome run_and_save(Experiment e, const std::string& origin, const std::string& results_dir,
                               const std::string& model_override, int argc, char** argv, bool trace = false) {
  ModelSettings mo = e.model;
  if (!model_override.empty())
    mo.path = model_override;
  else if (e.default_model)
    mo.path = default_model();
  const std::string& model = mo.path;
  ExperimentEnv env;
  nlohmann::json meta = full_meta(argc, argv, model);
  meta["engine"] = {{"name", to_string(mo.engine)}, {"winograd", mo.winograd}};
  env.meta = meta_from_json(meta, "meta");
  if (mo.engine == EngineKind::none && e.verify) {  // zero features: nothing to verify
    std::cerr << "vecbench: engine none (input pipeline only): verification off\n";
    e.verify = false;
  }
  const ModelInfo info = model_info_from(model, meta["model"]);
  env.model_resize = info.resize_default;
  env.input_size = info.input_size;
  env.cuda_devices = cuda_device_count();
  env.make_factory = [mo] { return model_factory(mo); };
  ModelSettings ref = mo;  // the reference pass: TorchScript, fp32, as exported
  ref.precision = Precision::fp32;
  ref.channels_last = false;
  ref.cuda_graphs = false;
  ref.engine = EngineKind::torchscript;
  env.make_reference_factory = [ref] { return model_factory(ref); };
  env.make_source = [&e](ResizeMode m) { return experiment_source(e.images, m); };
  env.host_memory = [](const std::vector<VirtualDevice>& devs) { return host_memory_for(devs); };
  env.work_dir = fs::path(results_dir) / e.name / (".tmp-" + std::to_string(::getpid()));
  env.stop = &stop_flag();
  const Distribution& dist = current_distribution();
  std::ostringstream quiet;  // connected ranks other than 0 do not log the runs
  if (dist.active()) {
    env.dist = &dist;
    env.cpu_cores = dist.cpu_cores();
    env.work_dir += "-r" + std::to_string(dist.rank());
    if (!dist.comm().leader()) env.log = &quiet;
    if (dist.comm().connected()) {  // rank 0 makes a generated image set once, the others wait
      if (dist.rank() == 0) (void)experiment_source(e.images, env.model_resize);
      dist.comm().barrier();
    }
  }
  std::cerr << "vecbench: experiment '" << e.name << "' (" << origin << "), model " << model
            << (info.raw.contains("weights_note") ? " (" + info.raw["weights_note"].get<std::string>() + ")" : "")
            << "\n";
  ExperimentOutcome o;
  o.path = result_path(results_dir, e.name);      // named before the run: its traces go beside it
  if (dist.active() && !dist.comm().connected())  // one file per shard: vecbench merge --results
    o.path.replace_filename(o.path.stem().string() + "-shard" + std::to_string(dist.rank()) + "of" +
                            std::to_string(dist.size()) + ".json");
  if (dist.active() && dist.comm().connected())  // every rank must name the same folder: rank 0's
    o.path = dist.comm().broadcast(o.path.string());
  if (trace) env.trace_dir = o.path.parent_path() / (o.path.stem().string() + ".traces");
  // Saved after every step, as it stands (the runs not reached yet: skipped, kNotYetRun): a run
  // killed mid-experiment (a deadline, a lost machine) keeps every repetition it finished.
  env.on_progress = [&o](const ResultFile& partial) {
    std::error_code ec;
    fs::create_directories(o.path.parent_path(), ec);
    atomic_write(o.path, nlohmann::json(partial).dump(2) + "\n");
  };
  o.result = run_experiment(e, env);
  if (!dist.comm().leader()) {
    o.exit_code = std::stoi(dist.comm().broadcast(""));  // rank 0's exit status
    return o;
  }
  if (o.result.meta.environment) o.result.meta.environment->load_avg_after = load_average();
  const nlohmann::json j = o.result;
  atomic_write(o.path, j.dump(2) + "\n");      // first: a run never loses what it measured
  (void)result_from_json(j, o.path.string());  // then: it must match the schema it claims
  std::cout << "\n" << result_table(o.result) << "\nresult: " << o.path.string() << "\n";
  o.exit_code = stop_flag() ? kExitInterrupted : 0;
  for (const auto& r : o.result.runs)
    if (r.status == RunStatus::error || r.status == RunStatus::failed) o.exit_code = 1;
  if (dist.active() && dist.comm().connected()) dist.comm().broadcast(std::to_string(o.exit_code));
  return o;
}

}  // namespace

int cmd_run(const std::string& path, const std::string& results_dir, const std::string& model_override,
            RepetitionOverride reps, int argc, char** argv, bool trace) {
  Experiment e = path.empty() ? parse_experiment(nlohmann::json::parse(kQuickExperiment), "embedded quick.json")
                              : load_experiment(path);
  if (reps.fixed > 0) {
    e.repetitions = reps.fixed;
    e.max_repetitions = 0;
  }
  if (reps.adaptive > 0) {
    if (reps.adaptive < e.repetitions)
      throw ConfigError("--max-repetitions", "must be >= the repetitions (" + std::to_string(e.repetitions) + ")");
    e.max_repetitions = reps.adaptive;
  }
  return run_and_save(std::move(e), path.empty() ? "embedded quick.json" : path, results_dir, model_override, argc,
                      argv, trace)
      .exit_code;
}

namespace {
/// The experiment `vecbench tune` runs for one (model, engine) candidate: sequential and
/// data-parallel over 1..cores CPU devices, sharded, and CUDA splits when there are GPUs.
nlohmann::json tune_experiment(const std::string& images, const std::string& model, double budget_s, int cuda) {
  const int cores = hardware_cores();
  nlohmann::json exp = {{"name", "tune"},    {"model", model},      {"repetitions", 1},
                        {"verify", false},   {"warmup_batches", 3}, {"time_budget_s", budget_s},
                        {"interleave", true}};
  if (images.empty())
    exp["images"] = {{"generate", {{"count", 24}, {"seed", 11}}}};
  else if (images.rfind("synthetic:", 0) == 0)
    exp["images"] = {{"synthetic", std::stoi(images.substr(10))}};
  else if (images.size() > 4 && images.substr(images.size() - 4) == ".npy")
    exp["images"] = {{"predecoded", images}};
  else
    exp["images"] = {{fs::is_directory(images) ? "dir" : "list", images}};
  nlohmann::json matrices = nlohmann::json::array();
  matrices.push_back({{"strategy", {kSequentialStrategy}}, {"devices", {"cpu"}}, {"batch", {1, 8}}});
  nlohmann::json specs = nlohmann::json::array();
  for (int n = 2; n <= std::max(2, cores); ++n) specs.push_back("cpu/" + std::to_string(n));
  matrices.push_back({{"strategy", {"data-parallel"}}, {"devices", specs}, {"batch", {1, 4}}});
  matrices.push_back({{"strategy", {"data-parallel"}}, {"devices", {"cpu"}}, {"batch", {1, 8}}});
  matrices.push_back(
      {{"strategy", {"sharded"}}, {"devices", {"cpu/" + std::to_string(std::max(2, cores))}}, {"batch", {1, 4}}});
  if (cuda > 0)
    matrices.push_back(
        {{"strategy", {"data-parallel"}}, {"devices", {"cuda", "cuda:0/2", "cuda:0/3"}}, {"batch", {8, 32, 64}}});
  exp["matrix"] = matrices;
  return exp;
}

/// The route of a tune run, as a profile holds it.
RouteChoice route_of(const RunResult& r, EngineKind engine) {
  RouteChoice c;
  c.engine = engine;
  c.strategy = r.params.strategy;
  c.devices = r.params.text_of("devices");
  c.batch = static_cast<int>(r.params.batch.value_or(0));
  if (const std::vector<int> threads = effective_replica_threads(r); threads.size() > 1) c.threads = threads[0];
  return c;
}

/// Writes `best` (a run of `model`) as this machine's profile for that model.
void save_tune_profile(const std::string& model, const RunResult& best, EngineKind engine, double ips,
                       const std::string& images) {
  const MachineKey key = machine_key(read_model_info(model).identity(), cuda_device_count());
  const std::string path = profile_path(key);
  save_profile(path, key, route_of(best, engine),
               {{"img_per_s", ips}, {"images", images.empty() ? "generated" : images}, {"model", model}});
  std::printf(
      "saved profile %s (later `vecbench vectorize --model %s` runs on this machine use it; --no-profile "
      "ignores it)\n",
      path.c_str(), model.c_str());
}

}  // namespace

/// `vecbench tune`: searches strategies, virtual device counts, threads per replica and batch
/// sizes within a time budget and prints the winning command line.
namespace {
/// One route family `tune` tries: a model file on an engine, in fp32 or (opt-in) int8.
struct TuneCandidate {
  std::string model;
  EngineKind engine = EngineKind::torchscript;
  bool int8 = false;
};

/// The `vecbench vectorize` command line of tune's best run `r` of candidate `c`.
std::string tune_command(const RunResult& r, const TuneCandidate& c, const std::string& images,
                         const std::string& calibration) {
  const auto& p = r.params;
  std::string cmd = "vecbench vectorize --images " + (images.empty() ? std::string("IMAGES") : images) +
                    " --out OUT --model " + c.model;
  if (c.engine != EngineKind::torchscript) cmd += std::string(" --engine ") + to_string(c.engine);
  if (c.int8) cmd += " --precision int8 --calibration " + calibration;
  cmd += " --strategy " + p.strategy + " --devices " + p.text_of("devices") + " --batch " + p.text_of("batch");
  if (const std::vector<int> threads = effective_replica_threads(r); threads.size() > 1)
    cmd += " --threads " + std::to_string(threads[0]);
  return cmd;
}
}  // namespace

int cmd_tune(const TuneArgs& a, int argc, char** argv) {
  const std::string model = a.model.empty() ? default_model() : a.model;
  const int nc = cuda_device_count();
  // Candidates: the given model with LibTorch; on a CPU-only machine also the oneDNN engine (same
  // features within 1e-4) and, by default, the fused export the build makes next to the default
  // model (tools/export_inception.py --fuse prepacked: CPU only, same features within 1e-4); with
  // a calibration, the model's opt-in int8 route too, ranked apart (its vectors differ).
  std::vector<TuneCandidate> candidates = {{model, EngineKind::torchscript, false}};
  const std::string fused = default_fused_model();
  if (nc == 0 && has_engine(EngineKind::onednn)) candidates.push_back({model, EngineKind::onednn, false});
  if (a.model.empty() && nc == 0 && fs::exists(fused)) candidates.push_back({fused, EngineKind::torchscript, false});
  if (!a.calibration.empty()) {
    ModelSettings ms{model};
    ms.engine = EngineKind::onednn;
    ms.precision = Precision::int8;
    ms.calibration = a.calibration;
    (void)checked_int8_calibration(ms);  // the reason now (no VNNI, another model's), not after the fp32 runs
    if (nc > 0) throw ConfigError("--calibration", "int8 runs on CPU devices only; this machine tunes for its GPUs");
    candidates.push_back({model, EngineKind::onednn, true});
  }
  int rc = 0;
  double best_ips = -1, best_own_ips = -1, best8_ips = -1;  // own: the best fp32 run of `model` itself (--save)
  RunResult best, best_own, best8;
  TuneCandidate best_candidate;
  EngineKind best_own_engine = EngineKind::torchscript;
  for (const auto& cand : candidates) {
    nlohmann::json exp = tune_experiment(a.images, cand.model, a.budget_s / static_cast<double>(candidates.size()), nc);
    exp["engine"] = to_string(cand.engine);
    if (cand.int8) exp["precision"] = "int8", exp["calibration"] = a.calibration;
    const ExperimentOutcome o = run_and_save(parse_experiment(exp, "tune"), "tune", a.results_dir, "", argc, argv);
    rc = std::max(rc, o.exit_code);
    for (const RunResult& r : o.result.runs) {
      if (r.status != RunStatus::ok) continue;
      const double ips = r.summary.images_per_s.median;
      if (cand.int8) {
        if (ips > best8_ips) best8_ips = ips, best8 = r;
        continue;
      }
      if (ips > best_ips) best_ips = ips, best = r, best_candidate = cand;
      if (cand.model == model && ips > best_own_ips) best_own_ips = ips, best_own = r, best_own_engine = cand.engine;
    }
  }
  if (best_ips < 0) {
    std::cerr << "vecbench tune: no configuration finished within the budget\n";
    return 1;
  }
  std::printf("\nbest: %.2f img/s\n  %s\n", best_ips,
              tune_command(best, best_candidate, a.images, a.calibration).c_str());
  if (best8_ips > 0)
    std::printf(
        "best int8 (opt-in: vectors a few %% off fp32, not for FID; docs/engines.md): %.2f img/s (%.2fx fp32)\n"
        "  %s\n",
        best8_ips, best8_ips / best_ips,
        tune_command(best8, {model, EngineKind::onednn, true}, a.images, a.calibration).c_str());
  else if (!a.calibration.empty())
    std::printf("best int8: no int8 run finished within the budget\n");
  // the profile is the default route's: exact fp32 only
  if (a.save && best_own_ips > 0) save_tune_profile(model, best_own, best_own_engine, best_own_ips, a.images);
  return rc;
}

}  // namespace vecbench
