// vectorize's options (src/app/cli_parts.hpp): the model, inputs and outputs, the route, and the
// options of several processes.
#include "cli_parts.hpp"

#include <string>

#include "vecbench/dist/distribution_mode.hpp"
#include "vecbench/engine/engine_kind.hpp"
#include "vecbench/input/exif_policy.hpp"
#include "vecbench/input/jpeg_decoder.hpp"
#include "vecbench/input/resize.hpp"
#include "vecbench/output/output_format.hpp"
#include "vecbench/strategies/strategies.hpp"

namespace vecbench {
namespace cli {

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

/// vectorize: the model (a file, a tool's preset, or several encoders).
void add_vectorize_model_options(CLI::App* vec, VectorizeArgs& va) {
  vec->add_option("--model", va.model.path, "TorchScript model from tools/export_inception.py")->capture_default_str();
  vec->add_option(
      "--like", va.like,
      "pytorch-fid | torch-fidelity | clean-fid | clean-fid-legacy-tensorflow | clean-fid-legacy-pytorch | tf | "
      "dgm-eval | edm2 | edm2-pil | cmmd: that FID tool's weights for the encoder "
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
      "(EDM2's) | center-crop-pil-bicubic-u8 (CMMD's: the centre square, then pil-bicubic-u8) | "
      "pil-bicubic-u8-short-side-crop (CLIP's and clean-fid's CLIP-FID: the shorter side by pil-bicubic-u8, then the "
      "centre); all but tf-legacy and bilinear on the host only (default: the model's own)");
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
      "fastest on CPU; same features within 1e-4; DINOv2 and CLIP: fused matmuls, one image at a time, within 1e-5) "
      "| none (no network, zero features: the input pipeline's own ceiling) "
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

}  // namespace cli
}  // namespace vecbench
