// vecbench: command-line front end (CLI11 subcommands).
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "vecbench/core/sha256.hpp"
#include "vecbench/dist/distributed_run.hpp"
#include "vecbench/dist/merge.hpp"
#include "vecbench/engine/torchscript_model.hpp"
#include "vecbench/experiment/experiment_runner.hpp"
#include "vecbench/input/exif_policy.hpp"
#include "vecbench/input/inputs.hpp"
#include "vecbench/output/writer.hpp"
#include "vecbench/pipeline/progress.hpp"
#include "vecbench/results/compare.hpp"
#include "vecbench/results/meta.hpp"
#include "vecbench/results/report.hpp"
#include "vecbench/strategies/runner.hpp"
#ifdef VECBENCH_WITH_OPENCV
#include <opencv2/core/version.hpp>
#include "vecbench/input/imageset.hpp"
#endif

using namespace vecbench;

namespace {

std::atomic<bool> g_stop{false};

// Exit statuses (README "Exit status"): 0 ok; 1 a usage error or a fatal error; 2 some inputs
// failed (the rest is done); 3 the output folder refused the run (another writer holds it, or it
// holds another fingerprint; nothing was written); 130 interrupted. `compare`: 1 SLOWER, 2 could
// not compare.
constexpr int kExitError = 1;
constexpr int kExitUsage = 1;
constexpr int kExitOutputRefused = 3;

// ---- Scale-out (MPI ranks, shards): the processes of `vectorize` and `run` -----------------------
struct DistArgs {
  std::string mode = "static";
  std::size_t chunk = 0;
  double timeout_s = 600;
  int shard_index = -1, num_shards = 0;
};
std::unique_ptr<Comm> g_comm;
std::unique_ptr<Distribution> g_dist;

void add_dist_options(CLI::App* c, DistArgs& d) {
  c->add_option("--distribution", d.mode,
                "Several processes (mpirun): static (rank r takes every R-th input) or dynamic (rank 0 hands out "
                "chunks on request)")
      ->capture_default_str()
      ->check(CLI::IsMember({"static", "dynamic"}));
  c->add_option("--chunk", d.chunk, "dynamic: inputs per request (0: N/(16 ranks), within [2 x batch x devices, 256])")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 30));
  c->add_option("--rank-timeout", d.timeout_s, "dynamic: abort the job when a rank holds a chunk this many seconds")
      ->capture_default_str()
      ->check(CLI::Range(1e-3, 1e9));
  c->add_option("--shard-index", d.shard_index,
                "Without MPI: this process takes every N-th input from this one (default: $SLURM_PROCID)")
      ->check(CLI::Range(0, 1 << 20));
  c->add_option("--num-shards", d.num_shards,
                "Without MPI: number of processes sharing the inputs (default: $SLURM_NTASKS)")
      ->check(CLI::Range(1, 1 << 20));
}

/// Starts the process group (MPI when launched by mpirun/srun in an MPI build) once.
Distribution& open_dist(const DistArgs& d, int* argc, char*** argv) {
  if (!g_dist) {
    std::function<std::unique_ptr<Comm>()> mpi;
#ifdef VECBENCH_WITH_MPI
    mpi = [argc, argv] { return make_mpi_comm(argc, argv); };
#endif
    (void)argc;
    (void)argv;
    g_comm = open_process_group(d.shard_index, d.num_shards, mpi, std::cerr);
    g_dist = std::make_unique<Distribution>(*g_comm, DistributionOptions{d.mode, d.chunk, d.timeout_s});
  }
  return *g_dist;
}
Distribution& current_dist() { return open_dist(DistArgs{}, nullptr, nullptr); }
/// Ends MPI (if started) and returns `rc`.
int close_dist(int rc) {
  g_dist.reset();
  g_comm.reset();
  return rc;
}

extern "C" void on_signal(int sig) {
  if (g_stop.exchange(true)) {  // second Ctrl-C: die now (complete files are already in place)
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

std::string default_model() { return VECBENCH_DEFAULT_MODEL; }

/// A CLI11 check that accepts what `parse` (the setting's own parser) accepts and otherwise
/// gives the parser's message, so each closed set of names is listed in one place.
template <class Parse>
CLI::Validator parsed_by(Parse parse) {
  return CLI::Validator(
      [parse](std::string& s) -> std::string {
        try {
          (void)parse(s);
          return {};
        } catch (const std::exception& e) {
          return e.what();
        }
      },
      "");
}

/// Options shared by `vectorize` and `predecode`.
struct VectorizeArgs {
  std::string images;
  std::string out;
  std::string model = default_model();
  std::string format = "npy";
  std::string strategy = "data-parallel";
  std::string devices = "cpu";
  std::string resize;  // empty: the model's default
  std::string exif = "ignore";
  int batch = 1;
  int threads = 0;
  int decode_threads = 1;
  int prefetch = 4;
  int warmup = 0;  // vectorize: the first real batches are the warm-up (their features are kept)
  std::size_t shard_rows = 1024;
  bool fast_decode = false;
  bool no_resume = false;
  bool no_optimize = false;
  bool channels_last = false;
  bool flush_denormal = false;
  bool cuda_graphs = false;
  bool no_winograd = false;
  bool lenient_decode = false;
  bool replace_fingerprint = false;
  bool force = false;
  bool quiet = false;
  double progress_s = 30;
  std::uint64_t max_pixels = 178956970;
  std::string precision = "fp32";
  std::string engine = "torchscript";
  std::string json_out;
};

/// What makes this run's vectors (the output folder's fingerprint).
Fingerprint vectorize_fingerprint(const VectorizeArgs& a, const nlohmann::json& meta, const InputOptions& in,
                                  const ImageSource& source) {
  FingerprintFields f;
  f.model_sha256 = meta.value("weight_sha256", std::string());
  if (f.model_sha256.empty()) f.model_sha256 = sha256_file(a.model);  // not made by the export tool
  f.model_arch = meta.value("arch", std::string("?"));
  f.input_size = meta.value("input_size", 299);
  f.feature_dim = meta.value("feature_dim", 2048);
  f.resize = to_string(in.resize);
  f.exif = a.exif;
  f.fast_decode = a.fast_decode;
  f.arithmetic = a.engine == "none" ? "none" : a.precision;
  f.source = source.kind();
  if (const auto* syn = dynamic_cast<const SyntheticSource*>(&source))
    f.source += " seed " + std::to_string(syn->seed());
  return make_fingerprint(f);
}

/// Bytes of memory the system can still give (MemAvailable), 0 if unknown.
std::uint64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

/// Refuses (without --force) more CPU replicas than cores, or than the memory holds: each
/// replica holds its own copy of the network (~2.5x the model file: weights, packed weights and
/// activations).
void check_replicas_fit(const std::vector<VirtualDevice>& devs, int cores, const std::string& model, bool force) {
  if (force) return;
  const auto n = static_cast<int>(std::count_if(devs.begin(), devs.end(), [](auto& d) { return d.kind == "cpu"; }));
  if (n == 0) return;
  std::error_code ec;
  const auto file = fs::file_size(model, ec);
  const std::uint64_t per = ec ? 0 : file * 5 / 2;
  const std::uint64_t avail = available_memory_bytes();
  std::ostringstream why;
  if (n > cores)
    why << n << " virtual CPU devices on " << cores << " cores: each runs its own replica thread, so past one per core "
        << "they only compete for the cores and memory";
  else if (per > 0 && avail > 0 && per * static_cast<std::uint64_t>(n) > avail)
    why << n << " CPU replicas need about " << per * n / (1 << 20) << " MB, more than the " << avail / (1 << 20)
        << " MB of memory available";
  else
    return;
  throw ConfigError("--devices", why.str() + " (each replica ~" + std::to_string(per / (1 << 20)) +
                                     " MB); use fewer devices, or --force to run anyway");
}

int cmd_vectorize(const VectorizeArgs& a) {
  nlohmann::json meta = read_model_meta(a.model);
  InputOptions in;
  in.resize = parse_resize_mode(!a.resize.empty() ? a.resize : meta.value("resize_default", std::string("tf-legacy")));
  in.fast_decode = a.fast_decode;
  in.exif = a.exif;
  in.lenient_decode = a.lenient_decode;
  in.max_pixels = a.max_pixels;
  auto source = make_source(a.images, in);
  WriterOptions w;
  w.format = parse_output_format(a.format);
  w.out_dir = a.out;
  w.shard_rows = a.shard_rows;
  w.resume = !a.no_resume;
  w.fingerprint = vectorize_fingerprint(a, meta, in, *source);
  w.replace_fingerprint = a.replace_fingerprint;
  w.feature_dim = meta.value("feature_dim", 2048);
  const Distribution& dist = current_dist();
  DeviceOptions dopt;  // devices first: a refused device spec leaves OUT untouched
  dopt.threads_per_replica = a.threads;
  dopt.cuda_devices = cuda_device_count();
  if (dist.active()) dopt.cpu_cores = dist.cpu_cores();
  const auto devs = expand_devices(a.devices, dopt);
  check_replicas_fit(devs, dist.active() ? dist.cpu_cores() : hardware_cores(), a.model, a.force);
  if (dist.active()) {  // per-rank files; only rank 0 cleans up and scans what is done (MPI)
    w.rank = dist.rank();
    w.stale_temp_age_s = !dist.comm().connected() ? 600 : dist.rank() == 0 ? 0 : -1;
    if (dist.comm().connected() && dist.rank() != 0) w.resume = false;
  }
  OutputWriter writer(*source, w);
  std::size_t share = source->size();
  auto todo = dist.todo(writer.pending(), source->size(), &share);
  RunSettings s;
  s.batch_size = a.batch;
  s.decode_threads = a.decode_threads;
  s.prefetch_batches = a.prefetch;
  s.warmup_batches = a.warmup;
  s.stop = &g_stop;
  TorchModelOptions mo;
  mo.path = a.model;
  mo.optimize = !a.no_optimize;
  mo.channels_last = a.channels_last;
  mo.precision = a.precision;
  mo.flush_denormal = a.flush_denormal;
  mo.cuda_graphs = a.cuda_graphs;
  mo.engine = a.engine;
  mo.winograd = !a.no_winograd;
  std::ostringstream line;  // one write: ranks share stderr
  line << "vecbench: " << (dist.active() ? dist.label() + ": " : "") << source->size() << " inputs (" << source->kind()
       << "), " << todo.size() << " to do, " << (share - todo.size()) << " already done";
  if (dist.active())
    line << " (" << dist.size() << " " << (dist.comm().connected() ? "ranks, " + dist.mode() : "shards") << ")";
  line << "; model " << meta.value("arch", "?") << " (" << meta.value("weight_source", "?") << "), resize "
       << to_string(in.resize) << "; strategy " << a.strategy << " on " << a.devices << " =";
  for (const auto& d : devs) line << " " << d.name() << "(" << d.threads << " thr)";
  line << "; batch " << a.batch;
  if (source->duplicates_skipped() > 0) line << "; " << source->duplicates_skipped() << " duplicate inputs skipped";
  if (w.format != OutputFormat::none) line << "; fingerprint " << writer.fingerprint_id();
  line << "\n";
  if (!a.quiet) std::cerr << line.str() << std::flush;
  RunStats st;
  long chunks = -1;
  ResultSink* sink = &writer;
  std::unique_ptr<DieAfterSink> die;  // test hook: VECBENCH_TEST_DIE_AFTER=N[@RANK]
  if (const auto d = die_after_from_env(dist.rank()); d.n > 0)
    sink = (die = std::make_unique<DieAfterSink>(writer, d, dist.label())).get();
  ProgressOptions po;  // rank 0 of an MPI job shows its own share; other ranks show none
  po.interval_s = a.quiet || (dist.comm().connected() && !dist.comm().leader()) ? 0 : a.progress_s;
  po.terminal = ::isatty(STDERR_FILENO) != 0;
  if (dist.active()) po.label = dist.label() + ": ";
  ProgressSink progress(*sink, todo.size(), po, std::cerr);
  if (!todo.empty())
    st = dist.run(a.strategy, *source, todo, devs, torchscript_factory(mo), progress, s, meta.value("input_size", 299),
                  &chunks);
  progress.stop();
  writer.finish();
  const auto tot = finish_vectorize(dist, st, chunks, g_stop, a.out, w.format != OutputFormat::none, *source);
  if (!dist.comm().leader()) {
    std::fprintf(stderr, "vecbench: %s: ok=%zu failed=%zu wall_s=%.3f img_per_s=%.3f\n", dist.label().c_str(),
                 st.images_ok, st.images_failed, st.wall_s, st.images_per_s());
    return tot.exit_code;
  }
  std::string where;
  if (dist.active())
    where = dist.comm().connected() ? " ranks=" + std::to_string(dist.size())
                                    : " shard=" + std::to_string(dist.rank()) + "/" + std::to_string(dist.size());
  std::printf("vectorize images=%zu ok=%zu failed=%zu skipped=%zu wall_s=%.3f img_per_s=%.3f%s%s\n",
              dist.active() && !dist.comm().connected() ? share : source->size(), tot.ok, tot.failed,
              share - todo.size(), tot.wall_s, tot.images_per_s, where.c_str(),
              tot.interrupted ? " (interrupted)" : "");
  if (tot.merged)
    std::cerr << "vecbench: " << (fs::path(a.out) / "manifest.jsonl").string() << ": " << tot.merged->inputs
              << " inputs (" << tot.merged->ok << " ok, " << tot.merged->errors << " failed) merged from "
              << tot.merged->files.size() << " manifests\n";
  else if (dist.active() && w.format != OutputFormat::none)
    std::cerr << "vecbench: when every shard is done: vecbench merge " << a.out << "\n";
  if (writer.warned() > 0)
    std::cerr << "vecbench: " << writer.warned()
              << " inputs decoded with decoder warnings (--lenient-decode): their manifest lines say which\n";
  if (!a.json_out.empty()) atomic_write(a.json_out, tot.sample.dump(2) + "\n");
  return tot.exit_code;
}

int cmd_predecode(const std::string& images, const std::string& out, const std::string& resize, int size) {
  InputOptions in;
  in.resize = parse_resize_mode(resize);
  auto src = make_source(images, in);
  const std::size_t per = static_cast<std::size_t>(size) * size * 3;
  std::vector<std::uint8_t> all;
  std::vector<float> chw(per);
  std::size_t ok = 0, failed = 0;
  StageTimes t;
  for (std::size_t i = 0; i < src->size(); ++i) {
    try {
      src->load(i, size, chw.data(), t);
    } catch (const std::exception& e) {
      std::cerr << "vecbench: error: " << e.what() << "\n";
      ++failed;
      continue;
    }
    const std::size_t plane = static_cast<std::size_t>(size) * size;
    const std::size_t base = all.size();
    all.resize(base + per);
    for (std::size_t p = 0; p < plane; ++p)
      for (std::size_t c = 0; c < 3; ++c)
        all[base + p * 3 + c] = static_cast<std::uint8_t>(std::lround(std::clamp(chw[c * plane + p], 0.0f, 255.0f)));
    ++ok;
  }
  npy::save_u8(out, all.data(), {ok, static_cast<std::size_t>(size), static_cast<std::size_t>(size), 3});
  std::printf("predecode images=%zu failed=%zu out=%s\n", ok, failed, out.c_str());
  return failed > 0 ? 2 : 0;
}

int cmd_devices(const std::vector<std::string>& specs) {
  const int ncuda = cuda_device_count();
  const auto info = backend_info();
  std::printf("host: %d CPU cores; CUDA devices: %d; LibTorch %s\n", hardware_cores(), ncuda,
              info.value("libtorch", "?").c_str());
  for (const auto& g : info["gpus"]) std::printf("  %s\n", g.dump().c_str());
  std::vector<std::string> list = specs;
  if (list.empty()) {
    list = {"cpu", "cpu/2", "cpu/3"};
    if (ncuda > 0) list.insert(list.end(), {"cuda", "cuda:0", "cuda:0/3"});
  }
  DeviceOptions o;
  o.cuda_devices = ncuda;
  for (const auto& s : list) {
    std::printf("%-10s ->", s.c_str());
    try {
      for (const auto& d : expand_devices(s, o)) std::printf(" %s[%d thr]", d.name().c_str(), d.threads);
      std::printf("\n");
    } catch (const std::exception& e) {
      std::printf(" error: %s\n", e.what());
    }
  }
  return 0;
}

int cmd_model_info(const std::string& path) {
  const auto meta = read_model_meta(path);
  std::printf("model: %s\n", path.c_str());
  if (meta.empty()) {
    std::printf("  (no vecbench_meta.json in this file: not made by tools/export_inception.py)\n");
    return 0;
  }
  for (const auto& [k, v] : meta.items())
    std::printf("  %-16s %s\n", k.c_str(), v.is_string() ? v.get<std::string>().c_str() : v.dump().c_str());
  return 0;
}

/// The embedded default experiment (experiments/quick.json at build time).
const char* kQuickExperiment =
#include "quick_experiment.inc"
    ;

nlohmann::json full_meta(int argc, char** argv, const std::string& model) {
  nlohmann::json m = base_meta(argc, argv, VECBENCH_VERSION, VECBENCH_GIT_SHA, VECBENCH_SOURCE_DIR);
  const auto b = backend_info();
  m["gpus"] = b["gpus"];
  m["versions"] = {{"libtorch", b["libtorch"]},
                   {"cuda", b["cuda"]},
                   {"cudnn", b["cudnn"]},
#ifdef VECBENCH_WITH_OPENCV
                   {"opencv", CV_VERSION},
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
  return make_source(generate_image_set(im.generate).string(), in);
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
                               const std::string& model_override, int argc, char** argv) {
  const std::string model = !model_override.empty() ? model_override : e.model == "default" ? default_model() : e.model;
  ExperimentEnv env;
  nlohmann::json meta = full_meta(argc, argv, model);
  meta["engine"] = {{"name", e.engine}, {"winograd", e.winograd}};
  env.meta = meta_from_json(meta, "meta");
  if (e.engine == "none" && e.verify) {  // zero features: nothing to verify
    std::cerr << "vecbench: engine none (input pipeline only): verification off\n";
    e.verify = false;
  }
  const auto& mm = meta["model"];
  env.model_resize = parse_resize_mode(mm.value("resize_default", std::string("tf-legacy")));
  env.input_size = mm.value("input_size", 299);
  env.cuda_devices = cuda_device_count();
  TorchModelOptions mo;
  mo.path = model;
  mo.optimize = e.optimize;
  mo.precision = e.precision;
  mo.channels_last = e.channels_last;
  mo.cuda_graphs = e.cuda_graphs;
  mo.engine = e.engine;
  mo.winograd = e.winograd;
  env.make_factory = [mo] { return torchscript_factory(mo); };
  TorchModelOptions ref = mo;  // the reference pass: TorchScript, fp32, as exported
  ref.precision = "fp32";
  ref.channels_last = false;
  ref.cuda_graphs = false;
  ref.engine = "torchscript";
  env.make_reference_factory = [ref] { return torchscript_factory(ref); };
  env.make_source = [&e](ResizeMode m) { return experiment_source(e.images, m); };
  env.work_dir = fs::path(results_dir) / e.name / (".tmp-" + std::to_string(::getpid()));
  env.stop = &g_stop;
  const Distribution& dist = current_dist();
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
  std::cerr << "vecbench: experiment '" << e.name << "' (" << origin << "), model " << model << "\n";
  ExperimentOutcome o;
  o.result = run_experiment(e, env);
  if (!dist.comm().leader()) {
    o.exit_code = std::stoi(dist.comm().broadcast(""));  // rank 0's exit status
    return o;
  }
  o.path = result_path(results_dir, e.name);
  if (dist.active() && !dist.comm().connected())  // one file per shard: vecbench merge --results
    o.path.replace_filename(o.path.stem().string() + "-shard" + std::to_string(dist.rank()) + "of" +
                            std::to_string(dist.size()) + ".json");
  const nlohmann::json j = o.result;
  atomic_write(o.path, j.dump(2) + "\n");      // first: a run never loses what it measured
  (void)result_from_json(j, o.path.string());  // then: it must match the schema it claims
  std::cout << "\n" << result_table(o.result) << "\nresult: " << o.path.string() << "\n";
  o.exit_code = g_stop ? 130 : 0;
  for (const auto& r : o.result.runs)
    if (r.status == RunStatus::error || r.status == RunStatus::failed) o.exit_code = 1;
  if (dist.active() && dist.comm().connected()) dist.comm().broadcast(std::to_string(o.exit_code));
  return o;
}

int cmd_run(const std::string& path, const std::string& results_dir, const std::string& model_override, int reps,
            int argc, char** argv) {
  Experiment e = path.empty() ? parse_experiment(nlohmann::json::parse(kQuickExperiment), "embedded quick.json")
                              : load_experiment(path);
  if (reps > 0) e.repetitions = reps;
  return run_and_save(std::move(e), path.empty() ? "embedded quick.json" : path, results_dir, model_override, argc,
                      argv)
      .exit_code;
}

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
  matrices.push_back({{"strategy", {"sequential"}}, {"devices", {"cpu"}}, {"batch", {1, 8}}});
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

/// `vecbench tune`: searches strategies, virtual device counts, threads per replica and batch
/// sizes within a time budget and prints the winning command line.
int cmd_tune(const std::string& images, const std::string& model_arg, double budget_s, const std::string& results_dir,
             int argc, char** argv) {
  const std::string model = model_arg.empty() ? default_model() : model_arg;
  const int nc = cuda_device_count();
  // (model, engine) pairs to try: the given model with LibTorch; on a CPU-only machine also the
  // oneDNN engine (same features within 1e-4) and, by default, the fused export the build makes
  // next to the default model (tools/export_inception.py --fuse prepacked: CPU only, same
  // features within 1e-4).
  std::vector<std::pair<std::string, std::string>> candidates = {{model, "torchscript"}};
  const std::string fused = VECBENCH_DEFAULT_FUSED_MODEL;
  const auto engines = available_engines();
  if (nc == 0 && std::find(engines.begin(), engines.end(), "onednn") != engines.end())
    candidates.emplace_back(model, "onednn");
  if (model_arg.empty() && nc == 0 && fs::exists(fused)) candidates.emplace_back(fused, "torchscript");
  int rc = 0;
  double best_ips = -1;
  RunResult best;
  std::pair<std::string, std::string> best_candidate;
  for (const auto& cand : candidates) {
    nlohmann::json exp = tune_experiment(images, cand.first, budget_s / static_cast<double>(candidates.size()), nc);
    exp["engine"] = cand.second;
    const ExperimentOutcome o = run_and_save(parse_experiment(exp, "tune"), "tune", results_dir, "", argc, argv);
    rc = std::max(rc, o.exit_code);
    for (const RunResult& r : o.result.runs)
      if (r.status == RunStatus::ok && r.summary.images_per_s.median > best_ips) {
        best_ips = r.summary.images_per_s.median;
        best = r;
        best_candidate = cand;
      }
  }
  if (best_ips < 0) {
    std::cerr << "vecbench tune: no configuration finished within the budget\n";
    return 1;
  }
  const auto& p = best.params;
  const std::string threads = best.effective["devices"].size() > 1
                                  ? " --threads " + std::to_string(best.effective["devices"][0]["threads"].get<int>())
                                  : "";
  std::printf(
      "\nbest: %.2f img/s\n  vecbench vectorize --images %s --out OUT --model %s%s --strategy %s --devices %s "
      "--batch %s%s\n",
      best_ips, images.empty() ? "IMAGES" : images.c_str(), best_candidate.first.c_str(),
      best_candidate.second == "torchscript" ? "" : (" --engine " + best_candidate.second).c_str(),
      param_string(p, "strategy").c_str(), param_string(p, "devices").c_str(), param_string(p, "batch").c_str(),
      threads.c_str());
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  CLI::App app{"vecbench " VECBENCH_VERSION
               ": Inception-v3 pool_3 feature vectors from image lists, and the execution strategies "
               "that make N devices faster than one."};
  app.require_subcommand(0, 1);
  const std::string exit_status =
      "Exit status: 0 all ok; 1 usage error (a bad option value names the option) or fatal error; 2 some inputs "
      "failed, the rest is done; 3 the output folder refused the run (another writer holds its lock, or it holds "
      "vectors of another fingerprint; nothing was written); 130 interrupted. compare: 0 no regression, 1 a run is "
      "SLOWER, 2 nothing could be compared.";
  app.footer(exit_status);
  app.set_version_flag("--version", std::string("vecbench ") + VECBENCH_VERSION + " (" + VECBENCH_GIT_SHA + ")");

  VectorizeArgs va;
  auto* vec = app.add_subcommand("vectorize", "Turn images into 2048-float pool_3 vectors");
  vec->footer(
      "Output folder: one writer at a time (lock), one fingerprint (OUT/vecbench.json), each input once; see "
      "README 'Output folder'.\n" +
      exit_status);
  vec->add_option("--images", va.images,
                  "Image directory, one image, list file (one path per line), pre-decoded .npy, or synthetic:N[:SEED]")
      ->required();
  vec->add_option("--out", va.out, "Output directory")->required();
  vec->add_option("--model", va.model, "TorchScript model from tools/export_inception.py")->capture_default_str();
  vec->add_option("--format", va.format,
                  "vc (one text file per image, as the seed), npy (one .npy per image), shards (N x 2048 .npy shards + "
                  "manifest), none")
      ->capture_default_str()
      ->check(parsed_by(parse_output_format));
  vec->add_option("--strategy", va.strategy, "naive | sequential | sharded | data-parallel | mirrored")
      ->capture_default_str()
      ->check(parsed_by(make_strategy));
  vec->add_option("--devices", va.devices, "cpu, cpu/N, cuda, cuda:K, cuda:K/N (comma-separated)")
      ->capture_default_str();
  vec->add_option("--batch", va.batch, "Images per forward call (per device), 1..4096")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  vec->add_option("--threads", va.threads, "Intra-op threads per replica (0: split the cores), 0..1024")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  vec->add_option("--decode-threads", va.decode_threads, "data-parallel: decode threads, 1..256")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  vec->add_option("--prefetch", va.prefetch, "data-parallel: ready batches queued ahead, 1..1024")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  vec->add_option(
         "--warmup", va.warmup,
         "Extra untimed warm-up forwards per replica before the first real batch, 0..1000 (default 0: the first real "
         "batches are the warm-up, and their features are kept; experiments keep their own warm-up)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  vec->add_option("--resize", va.resize, "tf-legacy | bilinear (default: the model's own)")
      ->check(parsed_by(parse_resize_mode));
  vec->add_flag("--fast-decode", va.fast_decode,
                "Decode large JPEGs at 1/2, 1/4 or 1/8 DCT scale (faster, not bit-exact)");
  vec->add_option("--exif", va.exif, "EXIF orientation: ignore (as TF's DecodeJpeg) or apply")
      ->capture_default_str()
      ->check(parsed_by(parse_exif_policy));
  vec->add_flag("--lenient-decode", va.lenient_decode,
                "Accept images the decoder warns about (corrupt or truncated data, e.g. web-scraped sets): status ok "
                "with a `warning` in the manifest line (default: strict, such a file is an error)");
  vec->add_option("--max-pixels", va.max_pixels,
                  "Refuse images larger than this many pixels, read from the header before decoding (PIL's "
                  "decompression-bomb limit; bounds decode memory per thread at ~3 bytes per pixel)")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  vec->add_option("--shard-rows", va.shard_rows, "shards: rows per shard file, 1..1048576")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  vec->add_flag("--no-resume", va.no_resume, "Redo inputs whose output already exists");
  vec->add_flag("--replace-fingerprint", va.replace_fingerprint,
                "OUT holds vectors made under another fingerprint (model, preprocessing, precision): move them aside "
                "into OUT/superseded-*/ and redo every input under this run's");
  vec->add_flag("--force", va.force, "Run even with more CPU devices than cores, or than memory holds");
  vec->add_option("--progress", va.progress_s,
                  "Seconds between progress lines when stderr is not a terminal (on a terminal one line is redrawn "
                  "in place); 0: none")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  vec->add_flag("--quiet", va.quiet, "No start line and no progress (errors are still printed)");
  vec->add_flag("--no-optimize", va.no_optimize, "Skip optimize_for_inference after loading");
  vec->add_flag("--channels-last", va.channels_last, "Feed channels_last input");
  vec->add_option("--engine", va.engine,
                  "torchscript (LibTorch runs the module) | onednn (CPU: the module's weights as vecbench's own oneDNN "
                  "network: one blocked layout, fused conv+BN+ReLU, zero-copy concat, Winograd 3x3; fastest on CPU) | "
                  "none (no network, zero features: the input pipeline's own ceiling)")
      ->capture_default_str()
      ->check(CLI::IsMember(available_engines()));
  vec->add_flag("--no-winograd", va.no_winograd, "onednn: direct convolutions only (no Winograd 3x3)");
  vec->add_flag("--flush-denormal", va.flush_denormal, "Flush denormal floats to zero in replica threads");
  vec->add_flag("--cuda-graphs", va.cuda_graphs,
                "CUDA: capture each replica's forward once, replay it for full batches");
  vec->add_option("--precision", va.precision,
                  "fp32 | fp16 | bf16 (CUDA devices; bf16 also with --engine onednn on CPUs with AVX-512 BF16)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  vec->add_option("--json", va.json_out, "Also write the run's metrics as JSON to this file");
  DistArgs dist_args;
  add_dist_options(vec, dist_args);

  std::string pd_images, pd_out, pd_resize = "tf-legacy";
  int pd_size = 299;
  auto* pre = app.add_subcommand("predecode",
                                 "Decode and resize images once into a uint8 [N,S,S,3] .npy (model-side experiments)");
  pre->add_option("--images", pd_images, "Image directory or list file")->required();
  pre->add_option("--out", pd_out, "Output .npy")->required();
  pre->add_option("--resize", pd_resize, "tf-legacy | bilinear")
      ->capture_default_str()
      ->check(parsed_by(parse_resize_mode));
  pre->add_option("--size", pd_size, "Image side, 1..4096")->capture_default_str()->check(CLI::Range(1, 4096));

  std::vector<std::string> dev_specs;
  auto* devs = app.add_subcommand("devices", "List devices and what each spec expands to");
  devs->add_option("specs", dev_specs, "Device specs to expand");

  std::string info_model = default_model();
  auto* model = app.add_subcommand("model", "Model commands");
  auto* info = model->add_subcommand("info", "Print what a model file is (arch, weights, checksum, layout)");
  info->add_option("--model", info_model, "Model file")->capture_default_str();
  model->require_subcommand(1);

  std::string run_path, results_dir = "results", run_model;
  int run_reps = 0;
  auto* run = app.add_subcommand(
      "run", "Run an experiment file (default: the embedded quick.json) and write results/<name>/<UTC>.json");
  run->add_option("experiment", run_path, "Experiment JSON (experiments/*.json)");
  run->add_option("--results", results_dir, "Results directory")->capture_default_str();
  run->add_option("--model", run_model, "Override the experiment's model");
  run->add_option("--repetitions", run_reps, "Override the experiment's repetitions, 1..10000")
      ->check(CLI::Range(1, 10000));
  add_dist_options(run, dist_args);

  std::string tune_images, tune_model;
  double tune_budget = 180;
  auto* tune = app.add_subcommand("tune",
                                  "Search strategies, virtual devices, threads and batch sizes within a time budget; "
                                  "print the winning command line");
  tune->add_option("--images", tune_images, "Images to tune on (default: a generated ImageNet-like set)");
  tune->add_option("--model", tune_model, "Model file (default: the build's model)");
  tune->add_option("--budget", tune_budget, "Time budget in seconds")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e7));
  tune->add_option("--results", results_dir, "Results directory")->capture_default_str();

  std::string cmp_base, cmp_new;
  CompareOptions cmp_opt;
  auto* cmp =
      app.add_subcommand("compare", "Compare two result files: markdown table, verdicts, exit 1 if any run is SLOWER");
  cmp->footer(exit_status);
  cmp->add_option("base", cmp_base, "Base result JSON")->required();
  cmp->add_option("new", cmp_new, "New result JSON")->required();
  cmp->add_option("--threshold", cmp_opt.threshold, "Relative change that counts (0.1 = 10%), 0..10")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  cmp->add_option("--alpha", cmp_opt.alpha, "Significance level of the rank test, 0..1")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmp->add_option("--min-reps", cmp_opt.min_reps, "Fewer repetitions give UNKNOWN")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmp->add_option("--normalize-by", cmp_opt.normalize_by,
                  "Compare ratios to a reference run of the same file, e.g. strategy=sequential");

  std::vector<std::string> merge_dirs, merge_results;
  std::string merge_out;
  auto* mrg = app.add_subcommand("merge",
                                 "Combine the per-rank/per-shard manifests of output directories into one "
                                 "manifest.jsonl, or per-shard result files into one");
  mrg->add_option("dirs", merge_dirs,
                  "Output directories of vectorize (each merged in place; with --out, all into --out)");
  mrg->add_option("--results", merge_results, "Result files of `run --shard-index` to combine into --out FILE");
  mrg->add_option("--out", merge_out, "Output directory, or with --results the merged result file");

  std::vector<std::string> rep_inputs;
  std::string rep_out;
  auto* rep = app.add_subcommand("report", "Markdown report with scaling tables and PNG plots from result files");
  rep->add_option("results", rep_inputs, "Result JSON files")->required();
  rep->add_option("--out", rep_out, "Output directory")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints the help, or the error naming the option
    if (rc == 0) return 0;
    return argc > 1 && std::string(argv[1]) == "compare" ? kCompareUnusable : kExitUsage;
  }
  try {
    if (*vec || *run) open_dist(dist_args, &argc, &argv);
    if (*vec) return close_dist(cmd_vectorize(va));
    if (*mrg) return merge_command(merge_dirs, merge_results, merge_out, std::cout, std::cerr);
    if (*pre) return cmd_predecode(pd_images, pd_out, pd_resize, pd_size);
    if (*devs) return cmd_devices(dev_specs);
    if (*info) return cmd_model_info(info_model);
    if (*tune) return cmd_tune(tune_images, tune_model, tune_budget, results_dir, argc, argv);
    if (*run) return close_dist(cmd_run(run_path, results_dir, run_model, run_reps, argc, argv));
    if (*cmp) {
      try {
        const auto report = compare_results(load_result(cmp_base), load_result(cmp_new), cmp_opt);
        std::cout << compare_markdown(report);
        return compare_exit_code(report);
      } catch (const std::exception& e) {  // a broken comparison is not a regression
        std::cerr << "vecbench compare: error: " << e.what() << "\n";
        return kCompareUnusable;
      }
    }
    if (*rep) {
      std::vector<ResultFile> files;
      for (const auto& f : rep_inputs) files.push_back(load_result(f));
      write_report(files, rep_out, VECBENCH_PYTHON, std::string(VECBENCH_SOURCE_DIR) + "/tools/plot_results.py");
      std::cout << "report: " << (fs::path(rep_out) / "report.md").string() << "\n";
      return 0;
    }
    std::cout << app.help();
    return 0;
  } catch (const std::exception& e) {
    if (g_comm && g_comm->connected() && g_comm->size() > 1)  // end every rank, with this one's reason
      g_comm->abort("vecbench: error: rank " + std::to_string(g_comm->rank()) + " (" + host_name() + "): " + e.what() +
                        " (aborting all " + std::to_string(g_comm->size()) + " ranks)",
                    1);
    std::cerr << "vecbench: error: " << e.what() << "\n";
    return dynamic_cast<const OutputFolderError*>(&e) ? kExitOutputRefused : kExitError;
  }
}
