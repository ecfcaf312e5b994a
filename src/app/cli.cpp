// The command line (CLI11 subcommands): parses the arguments into each command's settings and
// calls the command (src/app/, declared in include/vecbench/app/commands.hpp); before that, sets
// how the process's malloc keeps freed buffers (keep_freed_buffers).
#include "vecbench/app/cli.hpp"

#include <malloc.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "vecbench/app/build_info.hpp"
#include "vecbench/app/commands.hpp"
#include "vecbench/app/merge.hpp"
#include "vecbench/core/cpu_features.hpp"
#include "vecbench/core/host.hpp"
#include "vecbench/dist/distribution_mode.hpp"
#include "vecbench/engine/engine_kind.hpp"
#include "vecbench/input/exif_policy.hpp"
#include "vecbench/input/jpeg_decoder.hpp"
#include "vecbench/input/resize.hpp"
#include "vecbench/output/output_format.hpp"
#include "vecbench/results/compare.hpp"
#include "vecbench/strategies/strategies.hpp"

using namespace vecbench;

extern "C" char* openblas_get_corename(void) __attribute__((weak));  // OpenBLAS, when linked
namespace {

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

/// An option naming one of a closed set: `parse` (the setting's own parser) turns the name into
/// `field`'s type once, here; a bad name gets the parser's message.
template <class T, class Parse>
CLI::Option* add_parsed(CLI::App* app, const std::string& name, T& field, Parse parse, const std::string& help) {
  return app
      ->add_option_function<std::string>(
          name, [&field, parse](const std::string& s) { field = parse(s); }, help)
      ->check(parsed_by(parse));
}

void add_dist_options(CLI::App* c, DistArgs& d) {
  add_parsed(c, "--distribution", d.mode, parse_distribution_mode,
             "Several processes (mpirun): static (rank r takes every R-th input) or dynamic (rank 0 hands out "
             "chunks on request)")
      ->default_str("static");
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

/// Every subcommand and the arguments it parsed into.
struct Cli {
  CLI::App *vec = nullptr, *pre = nullptr, *devs = nullptr, *info = nullptr, *run = nullptr, *tune = nullptr,
           *cmp = nullptr, *mrg = nullptr, *rep = nullptr, *trace_sum = nullptr, *ver = nullptr, *sts = nullptr,
           *fid = nullptr, *cal = nullptr, *models = nullptr, *met = nullptr;
  VectorizeArgs va;
  CalibrateArgs cal_args;
  DistArgs dist_args;
  std::string pd_images, pd_out, pd_resize = "tf-legacy";
  int pd_size = 299;
  std::vector<std::string> dev_specs;
  std::string info_model = default_model();
  std::string run_path, results_dir = "results", run_model;
  int run_reps = 0;
  int run_max_reps = 0;
  bool run_no_trace = false;
  std::string trace_path;
  TuneArgs tune_args;
  std::string cmp_base, cmp_new;
  CompareOptions cmp_opt;
  std::vector<std::string> merge_dirs, merge_results;
  std::string merge_out;
  StatsArgs stats_args;
  FidArgs fid_args;
  MetricsArgs met_args;
  std::string verify_dir;
  bool verify_repair = false;
  double verify_progress = 10;
  std::vector<std::string> rep_inputs;
  std::string rep_out;
};

/// vectorize: the model (a file, a tool's preset, or several encoders).
void add_vectorize_model_options(CLI::App* vec, VectorizeArgs& va) {
  vec->add_option("--model", va.model.path, "TorchScript model from tools/export_inception.py")->capture_default_str();
  vec->add_option(
      "--like", va.like,
      "pytorch-fid | torch-fidelity | clean-fid | clean-fid-legacy-tensorflow | clean-fid-legacy-pytorch | tf | "
      "dgm-eval | edm2 | edm2-pil: that FID tool's weights for the encoder "
      "(found where the tool keeps them: `vecbench models`) and its exact decode, resize and scaling, "
      "recorded in the fingerprint (docs/encoders.md)");
  vec->add_option("--encoders", va.encoders,
                  "ENC[:TOOL],...: several encoders from one decode, each image read and decoded once; each "
                  "encoder's vectors into OUT/ENC, a store of its own (its TOOL's preset, else --like's, else the "
                  "first whose weights are found), resumed on its own (docs/encoders.md)")
      ->delimiter(',');
  vec->add_option("--encoder", va.encoder,
                  "inception-v3 (default) | dinov2-vit-s-14 | dinov2-vit-b-14 | dinov2-vit-l-14 | dinov2-vit-g-14 | "
                  "vgg16: the encoder of --like's preset (without --like: the first tool whose weights for it are "
                  "found; docs/encoders.md)");
}

/// vectorize: what to read and what to write.
void add_vectorize_io_options(CLI::App* vec, VectorizeArgs& va) {
  vec->add_option("--images", va.images,
                  "Image directory, one image, list file (one path per line), pre-decoded .npy, or synthetic:N[:SEED]")
      ->required();
  vec->add_option("--out", va.out, "Output directory")->required();
  add_parsed(
      vec, "--format", va.format, [](const std::string& s) { return parse_output_format(s); },
      "vc (one text file per image, as the seed), npy (one .npy per image), shards (N x 2048 .npy shards + "
      "manifest), none")
      ->default_str("npy");
  std::string strategies;
  for (const auto& e : strategy_registry()) strategies += (strategies.empty() ? "" : " | ") + std::string(e.name);
  vec->add_option("--strategy", va.strategy, strategies + " (default: the route, see below)")
      ->check(parsed_by(find_strategy));
  vec->add_option("--devices", va.devices,
                  "cpu, cpu/N, cuda, cuda:K, cuda:K/N (comma-separated; default: the route, see below)");
  vec->add_option("--batch", va.batch, "Images per forward call (per device), 1..4096 (default: the route)")
      ->check(CLI::Range(1, 4096));
  vec->add_option("--threads", va.threads, "Intra-op threads per replica (0: split the cores), 0..1024")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  vec->add_option("--decode-threads", va.decode_threads,
                  "data-parallel: decode threads, 1..256 (default: the route's, one more whenever the devices wait for "
                  "input, up to the cores; a given count stays fixed)")
      ->check(CLI::Range(1, 256));
  vec->add_option("--prefetch", va.prefetch, "data-parallel: ready batches queued ahead, 1..1024")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  vec->add_option(
         "--warmup", va.warmup,
         "Extra untimed warm-up forwards per replica before the first real batch, 0..1000 (default 0: the first real "
         "batches are the warm-up, and their features are kept; experiments keep their own warm-up); with --decode "
         "gpu they run the first batch through the replica's JPEG decoder, which is then made before the clock")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  add_parsed(
      vec, "--resize", va.resize, parse_resize_mode,
      "tf-legacy | bilinear | pil-bicubic (clean-fid's clean resize) | pil-bicubic-u8 (dgm-eval's) | torch-bicubic-aa "
      "(EDM2's); the bicubic ones on the host only (default: the model's own)");
  vec->add_flag("--fast-decode", va.fast_decode,
                "Decode large JPEGs at 1/2, 1/4 or 1/8 DCT scale (faster, not bit-exact)");
  vec->add_option("--memory-cap-gb", va.memory_cap_gb,
                  "CUDA: memory cap per virtual device in GB, as the seed's 3 virtual GPUs of 1 GB (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 4096.0));
  add_parsed(vec, "--decode", va.decode, parse_decode,
             "Where and how images are decoded: auto (gpu when every device is CUDA and this build has nvJPEG, "
             "else cpu), cpu or exact (libjpeg's accurate IDCT, as PIL and OpenCV decode; the seed fed PIL's "
             "pixels), tf (the fast integer IDCT of TensorFlow's own DecodeJpeg on the JPEG bytes), gpu (JPEGs "
             "decoded by nvJPEG on each replica's CUDA device and resized there in float; other formats and "
             "files nvJPEG rejects on the host, counted in the results)")
      ->default_str("auto");
  add_parsed(vec, "--exif", va.exif, parse_exif_policy, "EXIF orientation: ignore (as TF's DecodeJpeg) or apply")
      ->default_str("ignore");
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
}

/// vectorize: how the run goes (resume, store, progress, engine and model settings).
void add_vectorize_run_options(CLI::App* vec, VectorizeArgs& va) {
  vec->add_flag("--no-resume", va.no_resume, "Redo inputs whose output already exists");
  vec->add_flag("--hash-inputs", va.hash_inputs,
                "Record each input file's XXH3-64 with its size, mtime, inode and device, and let the content "
                "decide on reruns (a file touched but unchanged is not redone; one rewritten with its old size "
                "and mtime is); every rerun reads every input once more");
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
  vec->add_flag("--no-profile", va.no_profile,
                "Ignore this machine's profile (`vecbench tune --save`): the route from defaults and flags only");
  vec->add_flag_callback(
      "--no-optimize", [&va] { va.model.optimize = false; }, "Skip optimize_for_inference after loading");
  vec->add_flag("--channels-last", va.model.channels_last, "Feed channels_last input");
  add_parsed(
      vec, "--engine", va.engine, [](const std::string& s) { return parse_engine(s); },
      "torchscript (LibTorch runs the module) | onednn (CPU: the module's weights as vecbench's own oneDNN "
      "network: one blocked layout, fused conv+BN+ReLU, zero-copy concat, Winograd 3x3, 5x5, 1x7, 7x1, 1x3, 3x1; "
      "fastest on CPU; same features within 1e-4) | none (no network, zero features: the input pipeline's own ceiling) "
      "(default: the route)");
  vec->add_flag_callback(
      "--no-winograd", [&va] { va.model.winograd = false; },
      "onednn: direct convolutions only (no Winograd: 3x3, 5x5, 1x7, 7x1, 1x3, 3x1)");
  vec->add_flag("--flush-denormal", va.model.flush_denormal, "Flush denormal floats to zero in replica threads");
  vec->add_flag("--cuda-graphs", va.model.cuda_graphs,
                "CUDA: capture each replica's forward once, replay it for full batches");
  add_parsed(
      vec, "--precision", va.model.precision, [](const std::string& s) { return parse_precision(s); },
      "fp32 | fp16 | bf16 (CUDA devices; bf16 also with --engine onednn on CPUs with AVX-512 BF16) | int8 (the "
      "onednn engine on CPUs with VNNI, with --calibration; faster, vectors change by a few percent: not for FID, "
      "docs/engines.md)")
      ->default_str("fp32");
  vec->add_option("--calibration", va.model.calibration,
                  "int8: the activation ranges of `vecbench calibrate` for this model (its sha256 joins the "
                  "fingerprint)");
  vec->add_option("--json", va.json_out, "Also write the run's metrics as JSON to this file");
  vec->add_option("--trace", va.trace_file,
                  "Record every thread's spans (read, decode, resize, assemble, h2d, forward, d2h, write, queue waits, "
                  "setup) and write them to this file as Chrome trace-event JSON (open in ui.perfetto.dev or "
                  "chrome://tracing; `vecbench trace summarize FILE` prints the busy/starved/blocked table); with "
                  "several ranks or shards, rank R > 0 writes FILE-rankR");
}

void add_vectorize(CLI::App& app, Cli& c, const std::string& exit_status) {
  c.vec = app.add_subcommand("vectorize", "Turn images into 2048-float pool_3 vectors");
  c.vec->footer(
      "Route (engine, strategy, devices, batch, threads, decode threads): what the flags leave open comes from this "
      "machine's profile (`vecbench tune --save`: $VECBENCH_CACHE/profiles/, else $XDG_CACHE_HOME/vecbench/profiles/, "
      "else "
      "~/.cache/vecbench/profiles/; per host, CPU/GPU model and model weights), else from defaults for the devices "
      "found: on CPU the onednn engine (when the model is an export and the CPU has AVX2), data-parallel, one "
      "1-thread replica per core up to 4 cores (2- or 4-core replicas beyond), batch 4, decode threads for the cores "
      "left (at least 1); on GPUs torchscript, all GPUs, batch 32. Always fp32 (bf16, --fast-decode: opt-in). The "
      "first line names the route and where it came from.\n"
      "LibTorch and OpenCV are opened only when the run needs them (the torchscript engine, CUDA, a model's first "
      "onednn run; formats other than JPEG and PNG): libvecbench_torch.so and libvecbench_opencv.so next to this "
      "executable, or $VECBENCH_TORCH_LIBRARY / $VECBENCH_OPENCV_LIBRARY.\n"
      "Output folder: one writer at a time (lock), one fingerprint (OUT/vecbench.json), each input once; see "
      "docs/vectorize.md.\n" +
      exit_status);
  add_vectorize_io_options(c.vec, c.va);
  add_vectorize_model_options(c.vec, c.va);
  add_vectorize_run_options(c.vec, c.va);
  add_dist_options(c.vec, c.dist_args);
}

/// predecode, devices, model info, run, tune.
void add_tool_commands(CLI::App& app, Cli& c) {
  c.pre = app.add_subcommand("predecode",
                             "Decode and resize images once into a uint8 [N,S,S,3] .npy (model-side experiments)");
  c.pre->add_option("--images", c.pd_images, "Image directory or list file")->required();
  c.pre->add_option("--out", c.pd_out, "Output .npy")->required();
  c.pre->add_option("--resize", c.pd_resize, "tf-legacy | bilinear | pil-bicubic | pil-bicubic-u8 | torch-bicubic-aa")
      ->capture_default_str()
      ->check(parsed_by(parse_resize_mode));
  c.pre->add_option("--size", c.pd_size, "Image side, 1..4096")->capture_default_str()->check(CLI::Range(1, 4096));

  c.cal = app.add_subcommand("calibrate",
                             "Measure the activation ranges of the int8 route (--precision int8) on real photos: the "
                             "model runs them in fp32 on the onednn engine, one at a time");
  c.cal
      ->add_option("--images", c.cal_args.images,
                   "Photos like the ones int8 will vectorize (a few hundred; directory, list file or image)")
      ->required();
  c.cal->add_option("--out", c.cal_args.out, "The calibration file to write (JSON)")->required();
  c.cal->add_option("--model", c.cal_args.model, "Model file (an export)")->capture_default_str();
  add_parsed(
      c.cal, "--resize", c.cal_args.resize, [](const std::string& s) { return parse_resize_mode(s); },
      "tf-legacy | bilinear | pil-bicubic (default: the model's; use the one you will vectorize with)");
  c.cal->add_option("--limit", c.cal_args.limit, "Use the first N images only (0: all)")->capture_default_str();
  add_parsed(
      c.cal, "--method", c.cal_args.method, [](const std::string& s) { return parse_calibration_method(s); },
      "A point's range from each image's largest value: mean-max (their mean: finer steps, rare clipping) | max "
      "(the largest: nothing clips)")
      ->default_str("max");

  c.devs = app.add_subcommand(
      "devices",
      "List devices, what each spec expands to and the oneDNN engine's route for each precision on this CPU");
  c.devs->add_option("specs", c.dev_specs, "Device specs to expand");

  CLI::App* model = app.add_subcommand("model", "Model commands");
  c.info = model->add_subcommand("info", "Print what a model file is (arch, weights, checksum, layout)");
  c.info->add_option("--model", c.info_model, "Model file")->capture_default_str();
  model->require_subcommand(1);

  c.run = app.add_subcommand(
      "run", "Run an experiment file (default: the embedded quick.json) and write results/<name>/<UTC>.json");
  c.run->add_option("experiment", c.run_path, "Experiment JSON (experiments/*.json)");
  c.run->add_option("--results", c.results_dir, "Results directory")->capture_default_str();
  c.run->add_option("--model", c.run_model, "Override the experiment's model");
  c.run
      ->add_option("--repetitions", c.run_reps,
                   "Run each run exactly this many times, 1..1000 (overrides the experiment's repetitions and "
                   "turns its adaptive repetitions off)")
      ->check(CLI::Range(1, 1000));
  c.run
      ->add_option("--max-repetitions", c.run_max_reps,
                   "Adaptive repetitions: add repetitions to a run, interleaved and within the time budget, until "
                   "its median's confidence interval (at least 90 %: 5 repetitions or more) is within "
                   "+-target_median_ci_pct (default 3 %) or it has this many, 1..1000 (overrides the experiment's "
                   "max_repetitions)")
      ->check(CLI::Range(1, 1000));
  c.run->add_flag("--no-trace", c.run_no_trace,
                  "Do not trace the runs (default: every repetition is traced for the busy/starved/blocked and "
                  "forward-overlap figures of its sample, and the first repetition of each run is written as Chrome "
                  "trace-event JSON to results/<name>/<UTC>.traces/run<I>.json, named in the sample's trace.file)");
  add_dist_options(c.run, c.dist_args);

  c.tune = app.add_subcommand("tune",
                              "Search strategies, virtual devices, threads and batch sizes within a time budget; "
                              "print the winning command line");
  c.tune->add_option("--images", c.tune_args.images, "Images to tune on (default: a generated ImageNet-like set)");
  c.tune->add_option("--model", c.tune_args.model, "Model file (default: the build's model)");
  c.tune->add_option("--budget", c.tune_args.budget_s, "Time budget in seconds")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e7));
  c.tune->add_option("--results", c.tune_args.results_dir, "Results directory")->capture_default_str();
  c.tune->add_option("--calibration", c.tune_args.calibration,
                     "Also try the model's opt-in int8 route (onednn, CPUs with VNNI) with this calibration of "
                     "`vecbench calibrate`; ranked apart and printed on its own line (its vectors differ from fp32's), "
                     "never saved as the profile");
  c.tune->add_flag("--save", c.tune_args.save,
                   "Save the winner (of the given model's routes) as this machine's profile, which later `vectorize` "
                   "runs of that model use for what their flags leave open ($VECBENCH_CACHE/profiles/, else "
                   "$XDG_CACHE_HOME/vecbench/profiles/, else "
                   "~/.cache/vecbench/profiles/; $VECBENCH_PROFILE_DIR overrides)");
}

/// stats, fid: the model image inputs are vectorized with, and where.
void add_fid_model_options(CLI::App* cmd, FidModelArgs& m) {
  cmd->add_option("--model", m.model,
                  "Image inputs: this TorchScript model (default: the first FID tool's weights found, pytorch-fid's "
                  "first: `vecbench models`)");
  cmd->add_option(
      "--like", m.like,
      "pytorch-fid | torch-fidelity | clean-fid | clean-fid-legacy-tensorflow | clean-fid-legacy-pytorch | tf | "
      "dgm-eval | edm2 | edm2-pil: that tool's weights and exact pipeline for image inputs; stores made otherwise "
      "are refused");
  cmd->add_option("--encoder", m.encoder,
                  "inception-v3 (default) | dinov2-vit-s-14 | dinov2-vit-b-14 | dinov2-vit-l-14 | dinov2-vit-g-14 | "
                  "vgg16: the features the figures are of; stores of another encoder are refused (docs/encoders.md)");
  cmd->add_flag("--allow-synthetic-weights", m.allow_synthetic,
                "Compute from synthetic (random) weights anyway (refused by default); every figure then says so");
  cmd->add_option("--store", m.store_root,
                  "Where image inputs are vectorized (one store per input and model below it; default "
                  "$VECBENCH_CACHE/stores, else $XDG_CACHE_HOME/vecbench/stores, else ~/.cache/vecbench/stores)");
}

/// verify, stats, fid: reading a store's vectors back.
void add_store_commands(CLI::App& app, Cli& c) {
  c.models = app.add_subcommand(
      "models",
      "Each encoder's weights files vecbench looks for, per tool (Inception-v3: pytorch-fid's, torch-fidelity's, the "
      "TF graph, clean-fid's; DINOv2 and VGG-16: the hub's and torchvision's), where, which were found, their SHA-256 "
      "and imported models");
  c.ver = app.add_subcommand("verify",
                             "Re-read every stored vector of an output folder against its manifest line and checksum; "
                             "print each missing, truncated or corrupted one (BAD input: file: why). Exit 0 all good, "
                             "2 some bad, 1 error, 3 the folder is in use");
  c.ver->add_option("out", c.verify_dir, "Output directory of vectorize")->required();
  c.ver->add_flag("--repair", c.verify_repair,
                  "Move the files holding bad vectors into OUT/corrupt-<UTC>/ so that the next vectorize redoes "
                  "their inputs (a shard's other rows too)");
  c.ver->add_option("--progress", c.verify_progress, "Seconds between progress lines on stderr (0: none)")
      ->capture_default_str();

  c.sts = app.add_subcommand("stats",
                             "FID statistics of stored features: mu and sigma in float64 (pytorch-fid's and TTUR's "
                             ".npz keys, plus n, the fingerprint and the vecbench version), one streaming pass");
  c.sts
      ->add_option("in", c.stats_args.in,
                   "An output folder of vectorize, a float32 .npy feature matrix [N, dim], or images (a folder, "
                   "list or file: vectorized first, default route, into a resumable store)")
      ->required();
  add_fid_model_options(c.sts, c.stats_args.m);
  c.sts->add_option("--out", c.stats_args.out, "The .npz file to write")->required();
  c.fid = app.add_subcommand("fid",
                             "FID between two sides (output folders, .npy feature matrices, .npz stats files of "
                             "vecbench, pytorch-fid, TTUR, clean-fid or ADM, EDM2's .pkl, or images: vectorized "
                             "first); FID (another encoder's Frechet distance, e.g. FD_DINOv2, with --encoder) is "
                             "the last line");
  c.fid->add_option("a", c.fid_args.a, "First side")->required();
  c.fid->add_option("b", c.fid_args.b, "Second side")->required();
  c.fid->add_option("--json", c.fid_args.json_out, "Also write fid, n_a, n_b, the fingerprints and warnings here");
  c.fid->add_flag("--kid", c.fid_args.kid, "Also KID as clean-fid computes it (needs features, not stats files)");
  c.fid->add_option("--kid-subsets", c.fid_args.kid_subsets, "KID: random subsets")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  c.fid
      ->add_option("--kid-subset-size", c.fid_args.kid_subset_size,
                   "KID: vectors per subset and side (capped at the smaller side)")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000000));
  c.fid->add_option("--seed", c.fid_args.seed, "KID: the subsets' random seed")->capture_default_str();
  add_fid_model_options(c.fid, c.fid_args.m);
  c.fid->add_flag("--allow-mismatch", c.fid_args.allow_mismatch,
                  "Compare sides whose fingerprints differ (another model, resize or decode): refused by default");
}

/// metrics: IS, FID, KID, precision/recall and density/coverage from the same stores.
void add_metrics_command(CLI::App& app, Cli& c) {
  MetricsArgs& m = c.met_args;
  c.met = app.add_subcommand("metrics",
                             "Generative-model metrics of A (the generated set) against B (the real set): the "
                             "Inception Score of A from its stored pool_3 vectors and the model's classifier "
                             "(torch-fidelity's isc), FID, KID (clean-fid's), precision/recall (torch-fidelity's "
                             "prc, k=3) and density/coverage (prdc, k=5); k-NN distances in bounded memory. Without "
                             "a metric flag: --isc for one side, --fid --kid --prc --prdc for two");
  c.met->add_option("a", m.a, "The generated set: an output folder, a .npy feature matrix, or images")->required();
  c.met->add_option("b", m.b, "The real set (the same kinds)");
  c.met->add_flag("--isc", m.isc, "Inception Score of A (needs the model's classifier: --model or --like)");
  c.met->add_flag("--fid", m.fid, "FID of A and B (with --encoder: that encoder's Frechet distance)");
  c.met->add_flag("--fd-dinov2", m.fd_dinov2,
                  "FD_DINOv2 of A and B too: DINOv2 ViT-L/14 features of the same inputs (--like's DINOv2 protocol, "
                  "else dgm-eval's; a store of several encoders gives its dinov2-vit-l-14 one; docs/encoders.md)");
  c.met->add_flag("--kid", m.kid, "KID of A and B (clean-fid's)");
  c.met->add_flag("--prc", m.prc,
                  "Improved precision and recall (Kynkaanniemi et al.; torch-fidelity's prc): float64 distances; "
                  "with --like torch-fidelity its own float32 ones (torch.cdist on the CPU, in its batches of 10,000 "
                  "rows: up to 400 MB), and how many samples lie within float32 rounding of a ball's edge");
  c.met->add_flag("--prdc", m.prdc, "Density and coverage (Naeem et al.; the prdc package, with its P/R)");
  c.met->add_option("--isc-splits", m.isc_splits, "IS: splits")->capture_default_str()->check(CLI::Range(1, 100000));
  c.met
      ->add_option("--isc-seed", m.isc_seed,
                   "IS: the seed of the rows' shuffle (NumPy RandomState's, as torch-fidelity)")
      ->capture_default_str();
  c.met->add_flag("--no-isc-shuffle{false}", m.isc_shuffle, "IS: split the rows in stored order");
  c.met->add_option("--prc-k", m.prc_k, "Precision/recall: the k-th neighbour's radius")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  c.met->add_option("--prdc-k", m.prdc_k, "Density/coverage: the k-th neighbour's radius")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  c.met->add_option("--kid-subsets", m.kid_subsets, "KID: random subsets")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  c.met->add_option("--kid-subset-size", m.kid_subset_size, "KID: vectors per subset and side")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000000));
  c.met->add_option("--seed", m.seed, "KID: the subsets' random seed")->capture_default_str();
  c.met->add_option("--block-rows", m.row_block, "k-NN: rows of float64 distances computed at a time (x 4096 x 8 B)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  c.met->add_option("--json", m.json_out, "Also write every figure, the sides, their fingerprints and warnings here");
  add_fid_model_options(c.met, m.m);
  c.met->add_flag("--allow-mismatch", m.allow_mismatch,
                  "Compare sides whose fingerprints differ (another model, resize or decode): refused by default");
}

/// compare, merge, report.
void add_result_commands(CLI::App& app, Cli& c, const std::string& exit_status) {
  c.cmp =
      app.add_subcommand("compare", "Compare two result files: markdown table, verdicts, exit 1 if any run is SLOWER");
  c.cmp->footer(exit_status);
  c.cmp->add_option("base", c.cmp_base, "Base result JSON")->required();
  c.cmp->add_option("new", c.cmp_new, "New result JSON")->required();
  c.cmp->add_option("--threshold", c.cmp_opt.threshold, "Relative change that counts (0.1 = 10%), 0..10")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  c.cmp->add_option("--alpha", c.cmp_opt.alpha, "Significance level of the rank test, 0..1")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  c.cmp->add_option("--min-reps", c.cmp_opt.min_reps, "Fewer repetitions give UNKNOWN")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  c.cmp->add_option("--normalize-by", c.cmp_opt.normalize_by,
                    "Compare ratios to a reference run of the same file, e.g. strategy=sequential");
  std::string metrics;
  for (const SampleMetric& m : sample_metrics()) metrics += (metrics.empty() ? "" : " | ") + m.key;
  c.cmp
      ->add_option("--metric", c.cmp_opt.metric,
                   "Per-repetition figure compared: " + metrics +
                       " (time metrics give FASTER/SLOWER, peak_rss_bytes BETTER/WORSE; lower-is-better ones are "
                       "judged that way)")
      ->capture_default_str()
      ->check(parsed_by(sample_metric));

  c.mrg = app.add_subcommand("merge",
                             "Combine the per-rank/per-shard manifests of output directories into one "
                             "manifest.jsonl, or per-shard result files into one");
  c.mrg->add_option("dirs", c.merge_dirs,
                    "Output directories of vectorize (each merged in place; with --out, all into --out)");
  c.mrg->add_option("--results", c.merge_results, "Result files of `run --shard-index` to combine into --out FILE");
  c.mrg->add_option("--out", c.merge_out, "Output directory, or with --results the merged result file");

  c.rep = app.add_subcommand("report", "Markdown report with scaling tables and PNG plots from result files");
  c.rep->add_option("results", c.rep_inputs, "Result JSON files")->required();
  c.rep->add_option("--out", c.rep_out, "Output directory")->required();

  CLI::App* trace = app.add_subcommand("trace", "Trace files (Chrome trace-event JSON of vectorize --trace and run)");
  c.trace_sum = trace->add_subcommand(
      "summarize",
      "Print per device the fraction of the timed window busy, starved (waiting for input) and blocked "
      "(waiting for the writer or a barrier), and the devices' forward overlap (1 = serialized, N = "
      "N devices at once), for each process of a trace file");
  c.trace_sum->add_option("file", c.trace_path, "Trace JSON file")->required();
  trace->require_subcommand(1);
}

/// Debian 12's OpenBLAS (0.3.21) does not know Intel's newest server CPUs (seen: family 6 model
/// 207, an AVX-512 + AMX Xeon): it runs its Prescott (SSE3) kernels there, and dgemm is 4-5x
/// slower (`metrics --prc` of 3,000 x 3,000 vectors: 7.4 s against 1.6 s). OpenBLAS picks its
/// kernels when it loads, from OPENBLAS_CORETYPE: so when a command that uses it (stats, fid,
/// metrics) finds it on such an old kernel on a CPU with AVX-512 (or AVX2 and FMA), it starts
/// itself again with OPENBLAS_CORETYPE=SkylakeX (Haswell), before it printed anything (the
/// first line stays the model's; OPENBLAS_VERBOSE=2 shows the kernel). A kernel OpenBLAS chose
/// for the CPU, and an OPENBLAS_CORETYPE already set, are kept.
void use_openblas_kernels_for_this_cpu(char** argv) {
  if (!openblas_get_corename || std::getenv("OPENBLAS_CORETYPE")) return;
  const std::string core = openblas_get_corename();
  std::string lower;
  for (const char ch : core) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  static const std::set<std::string> old = {"unknown", "katmai", "coppermine", "northwood",    "prescott",
                                            "banias",  "atom",   "core2",      "penryn",       "dunnington",
                                            "nehalem", "athlon", "opteron",    "opteron_sse3", "barcelona"};
  const bool is_old = old.count(lower) > 0;
  const CpuFeatures& f = cpu_features();
  const char* better = f.avx512_bw_vl ? "SkylakeX" : f.avx2_fma ? "Haswell" : nullptr;
  if (!is_old || !better) return;
  setenv("OPENBLAS_CORETYPE", better, 1);
  execv("/proc/self/exe", argv);
  std::cerr << "vecbench: warning: could not start again (" << std::strerror(errno) << "): going on with the " << core
            << " kernels\n";
}

/// Runs the parsed subcommand; returns the exit status.
int dispatch(CLI::App& app, Cli& c, int argc, char** argv, const CommandHooks& hooks) {
  if (*c.sts || *c.fid || *c.met) use_openblas_kernels_for_this_cpu(argv);
  if (*c.vec || *c.run) open_distribution(c.dist_args, &argc, &argv);
  if (*c.vec) return close_distribution(cmd_vectorize(c.va, hooks));
  if (*c.sts) return cmd_stats(c.stats_args);
  if (*c.models) return cmd_models();
  if (*c.fid) return cmd_fid(c.fid_args);
  if (*c.met) return cmd_metrics(c.met_args);
  if (*c.ver) return cmd_verify(c.verify_dir, c.verify_repair, c.verify_progress);
  if (*c.mrg) return merge_command(c.merge_dirs, c.merge_results, c.merge_out, std::cout, std::cerr);
  if (*c.pre) return cmd_predecode(c.pd_images, c.pd_out, c.pd_resize, c.pd_size);
  if (*c.devs) return cmd_devices(c.dev_specs);
  if (*c.cal) return cmd_calibrate(c.cal_args);
  if (*c.info) return cmd_model_info(c.info_model);
  if (*c.tune) return cmd_tune(c.tune_args, argc, argv);
  if (*c.run)
    return close_distribution(
        cmd_run(c.run_path, c.results_dir, c.run_model, {c.run_reps, c.run_max_reps}, argc, argv, !c.run_no_trace));
  if (*c.trace_sum) return cmd_trace_summarize(c.trace_path);
  if (*c.cmp) return cmd_compare(c.cmp_base, c.cmp_new, c.cmp_opt);
  if (*c.rep) return cmd_report(c.rep_inputs, c.rep_out);
  std::cout << app.help();
  return 0;
}

/// Every command's help ends with the page of docs/ that explains it.
void add_doc_links(CLI::App& app) {
  const std::map<std::string, std::string> page = {{"vectorize", "vectorize"},
                                                   {"verify", "vectorize"},
                                                   {"predecode", "vectorize"},
                                                   {"stats", "fid"},
                                                   {"fid", "fid"},
                                                   {"models", "encoders"},
                                                   {"metrics", "metrics"},
                                                   {"devices", "engines"},
                                                   {"model", "engines"},
                                                   {"calibrate", "engines"},
                                                   {"tune", "engines"},
                                                   {"run", "experiments"},
                                                   {"compare", "experiments"},
                                                   {"report", "experiments"},
                                                   {"trace", "experiments"},
                                                   {"merge", "distributed"}};
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    const auto it = page.find(sub->get_name());
    if (it == page.end()) continue;
    const std::string f = sub->get_footer();
    sub->footer((f.empty() ? "" : f + "\n") + "Docs: docs/" + it->second + ".md in vecbench's source tree.");
  }
  app.footer(app.get_footer() + "\nDocs: README.md and docs/ in vecbench's source tree.");
}

}  // namespace

extern "C" int blas_thread_shutdown_(void) __attribute__((weak));  // OpenBLAS (pthreads), when linked

namespace vecbench {

namespace {
/// glibc's malloc serves a large block (first 128 KB, then the largest freed so far) with a
/// fresh mmap and gives freed memory back to the system: every decoded photo, resized batch and
/// output then costs page faults again (under KVM each fresh page is expensive). The batches and
/// decode buffers of a run are the same few sizes over and over: keep them in the heap and
/// reuse them (+3 MB peak RSS; 9 700 fewer page faults, 1.5 % less CPU on 100 photos,
/// results/whole-job/startup-mmap-20261203.md). Blocks of 256 MB and more still get their own
/// mapping.
void keep_freed_buffers() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

/// OpenBLAS's pthread build (the FID code's BLAS) starts its worker threads when the library
/// loads, and they spin on sched_yield for about 0.1 s before sleeping: at every start, on the
/// cores the replicas set up on, whatever the command. They are stopped here; OpenBLAS starts
/// them again at its next threaded call (the same lazy re-start it does after a fork). Absent
/// (another BLAS, or a build without FID): nothing to do.
void stop_idle_blas_threads() {
  if (blas_thread_shutdown_) blas_thread_shutdown_();
}

}  // namespace

int run_cli(int argc, char** argv, const CommandHooks& hooks) {
  keep_freed_buffers();
  stop_idle_blas_threads();
  install_signal_handlers();
  CLI::App app{"vecbench " VECBENCH_VERSION
               ": Inception-v3 pool_3 feature vectors from image lists, and the execution strategies "
               "that make N devices faster than one."};
  app.require_subcommand(0, 1);
  const std::string exit_status =
      "Exit status: 0 all ok; 1 usage error (a bad option value names the option) or fatal error; 2 some inputs "
      "failed, the rest is done; 3 the output folder refused the run (another writer holds its lock, or it holds "
      "vectors of another fingerprint; nothing was written); 130 interrupted. run: 1 a run in error or off its "
      "reference beyond its tolerance. compare: 0 no regression, 1 a run is SLOWER, 2 nothing could be compared, 3 "
      "none SLOWER but a run was measured noisy (UNKNOWN).";
  app.footer(exit_status);
  const BuildInfo build = build_info();
  app.set_version_flag("--version", std::string("vecbench ") + VECBENCH_VERSION + " (" + build.git_sha +
                                        (build.git_dirty ? ", dirty" : "") + ", " + build.build_type + ")");
  Cli c;
  add_vectorize(app, c, exit_status);
  add_tool_commands(app, c);
  add_result_commands(app, c, exit_status);
  add_store_commands(app, c);
  add_metrics_command(app, c);
  add_doc_links(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints the help, or the error naming the option
    if (rc == 0) return 0;
    return argc > 1 && std::string(argv[1]) == "compare" ? kCompareUnusable : kExitUsage;
  }
  try {
    return dispatch(app, c, argc, argv, hooks);
  } catch (const std::exception& e) {
    abort_all_ranks(e.what());
    std::cerr << "vecbench: error: " << e.what() << "\n";
    return dynamic_cast<const OutputFolderError*>(&e) ? kExitOutputRefused : kExitError;
  }
}

}  // namespace vecbench
