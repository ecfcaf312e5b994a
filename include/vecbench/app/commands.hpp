// The commands of the vecbench CLI: src/app/cli.cpp parses the command line into these
// argument structs and calls the commands, which live in src/app/ (library vecbench_commands).
// The process-wide state of a command (the stop flag set by Ctrl-C, the process group of MPI
// ranks or shards) is here too, behind functions.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vecbench/dist/distributed_run.hpp"
#include "vecbench/dist/distribution_mode.hpp"
#include "vecbench/engine/engine_kind.hpp"
#include "vecbench/engine/model_settings.hpp"
#include "vecbench/input/exif_policy.hpp"
#include "vecbench/input/jpeg_decoder.hpp"
#include "vecbench/input/resize_formula.hpp"
#include "vecbench/output/output_format.hpp"

namespace vecbench {

struct CompareOptions;  // results/compare.hpp

// Exit statuses (docs/vectorize.md "Exit status"): 0 ok; 1 a usage error or a fatal error; 2 some inputs
// failed (the rest is done); 3 the output folder refused the run (another writer holds it, or it
// holds another fingerprint; nothing was written); 130 interrupted. `compare`: 1 SLOWER, 2 could
// not compare.
constexpr int kExitError = 1;
constexpr int kExitUsage = 1;
constexpr int kExitSomeInputsFailed = 2;
constexpr int kExitOutputRefused = 3;
constexpr int kExitInterrupted = 130;

/// The build's default model (build/models/inception_tf2015_seed0.pt).
std::string default_model();
/// The fused export the build makes next to it (tools/export_inception.py --fuse prepacked).
std::string default_fused_model();
/// The folder of vecbench's Python tools (weights imports, plots): P/share/vecbench/tools beside
/// an installed binary (`cmake --install`), else the source tree's tools/ that built it.
std::string tools_dir();

/// Set by the first SIGINT/SIGTERM (install_signal_handlers): runs stop cleanly, keeping what
/// they wrote; a second signal ends the process at once.
std::atomic<bool>& stop_flag();
void install_signal_handlers();

/// How the processes of `vectorize` and `run` share the work (MPI ranks or shards).
struct DistArgs {
  DistributionMode mode = DistributionMode::static_share;  ///< --distribution static | dynamic
  std::size_t chunk = 0;
  double timeout_s = 600;
  int shard_index = -1, num_shards = 0;
};

/// Starts the process group once (MPI when launched by mpirun/srun in an MPI build); later calls
/// return the same one.
Distribution& open_distribution(const DistArgs& d, int* argc, char*** argv);
/// The process group (a single process when none was opened).
Distribution& current_distribution();
/// Ends MPI (if started) and returns `rc`.
int close_distribution(int rc);
/// On a fatal error: ends every rank of a connected MPI job with this rank's reason (no-op
/// otherwise).
void abort_all_ranks(const std::string& reason);

/// The options of `vectorize` (each documented by its flag in src/app/cli.cpp); closed sets
/// arrive parsed (the CLI parses each name once).
struct VectorizeArgs {
  std::string images;
  std::string out;
  /// The model and its replicas' settings; `model.engine` is the route's (see `engine`).
  ModelSettings model{default_model()};
  OutputFormat format = OutputFormat::npy;
  // The route: empty / 0 = chosen (a machine profile from `tune --save`, else the defaults for
  // the devices found: include/vecbench/app/route.hpp); the first line says which.
  std::string strategy;
  std::string devices;
  std::optional<ResizeMode> resize;  // unset: the model's default
  ExifPolicy exif = ExifPolicy::ignore;
  double memory_cap_gb = 0.0;  // CUDA memory cap per virtual device, GB (0: none)
  DecodeSetting decode;        // auto | cpu (= exact: PIL/OpenCV) | tf (TF's DecodeJpeg) | gpu (nvJPEG)
  int batch = 0;
  int threads = 0;
  int decode_threads = 0;
  int prefetch = 4;
  int warmup = 0;  // vectorize: the first real batches are the warm-up (their features are kept)
  std::size_t shard_rows = 1024;
  bool fast_decode = false;
  bool no_resume = false;
  bool lenient_decode = false;
  bool hash_inputs = false;  // an input file's XXH3-64 joins its identity (reruns read every input)
  bool replace_fingerprint = false;
  bool force = false;
  bool quiet = false;
  bool no_profile = false;  // ignore the machine profile (defaults and flags only)
  double progress_s = 30;
  std::uint64_t max_pixels = 178956970;
  std::optional<EngineKind> engine;  // --engine as given; unset: chosen, as the route above
  std::string like;                  // --like TOOL: that FID tool's weights and pipeline (app/fid_presets.hpp)
  std::string encoder;  // --encoder NAME: with --like, the tool's preset for that encoder (engine/encoder.hpp)
  /// --encoders ENC[:TOOL],...: several encoders from one decode, each into OUT/ENC (its tool's
  /// preset: TOOL, else --like, else the first whose weights are found)
  std::vector<std::string> encoders;
  std::string json_out;
  std::string trace_file;  ///< --trace FILE: write every thread's spans as Chrome trace-event JSON ("": off)
};

/// What a test changes in a command from outside (tests/vecbench_fault.cpp); the vecbench
/// executable sets none.
struct CommandHooks {
  /// vectorize: the sink results go to in place of the output writer (a wrapper around it, as
  /// testing/fault_injection.hpp's), or null to keep the writer.
  std::function<std::unique_ptr<ResultSink>(ResultSink& writer, const Distribution& dist)> wrap_writer;
};

/// `vecbench vectorize`: returns the exit status.
int cmd_vectorize(const VectorizeArgs& a, const CommandHooks& hooks = {});
/// Which model `stats` and `fid` vectorize image inputs with, and whether synthetic weights may
/// give a figure (app/fid_presets.hpp).
struct FidModelArgs {
  std::string model;             ///< --model FILE.pt ("": chosen, see choose_fid_model)
  std::string like;              ///< --like TOOL: that FID tool's weights and pipeline
  std::string encoder;           ///< --encoder NAME: the encoder ("": inception-v3, or the store's)
  bool allow_synthetic = false;  ///< --allow-synthetic-weights: compute from random weights, said so
  std::string store_root;        ///< --store: where image inputs are vectorized ("": the cache folder)
};
/// `vecbench stats IN --out FILE.npz`'s settings.
struct StatsArgs {
  std::string in, out;
  FidModelArgs m;
};
/// `vecbench stats IN --out FILE.npz`: mu and sigma (float64) of an output folder or .npy matrix;
/// an image folder, list or image is vectorized first into a store below `m.store_root`.
int cmd_stats(const StatsArgs& args);
/// `vecbench fid A B`'s settings.
struct FidArgs {
  std::string a, b;                    ///< output folders, .npy matrices, .npz stats, or images (vectorized first)
  std::string json_out;                ///< --json FILE
  bool kid = false;                    ///< --kid: also KID (needs features, not stats files)
  int kid_subsets = 100;               ///< --kid-subsets
  std::size_t kid_subset_size = 1000;  ///< --kid-subset-size
  std::uint64_t seed = 0;              ///< --seed: the KID subsets
  bool allow_mismatch = false;         ///< --allow-mismatch: compare sides of different fingerprints
  FidModelArgs m;
};
/// `vecbench fid A B`: prints FID as the last line (and KID with --kid).
int cmd_fid(const FidArgs& args);
/// `vecbench metrics A [B]`'s settings (docs/metrics.md). A is the generated set (torch-fidelity's
/// input1, prdc's fake), B the real one (input2, prdc's real).
struct MetricsArgs {
  std::string a, b;  ///< output folders, .npy feature matrices, or images (vectorized first); b: "" for none
  bool isc = false, fid = false, kid = false, prc = false, prdc = false;  ///< none: all that the sides allow
  /// --fd-dinov2: also the Fréchet distance of DINOv2 ViT-L/14 features (--like's DINOv2 preset
  /// when the tool has one, else dgm-eval's), from the same inputs
  bool fd_dinov2 = false;
  /// --cmmd: CMMD of A and B (google-research/cmmd's MMD, sigma 10, scale 1000) of the sides'
  /// embeddings as stored (include/vecbench/fid/cmmd.hpp)
  bool cmmd = false;
  std::size_t cmmd_batch = 0;  ///< --cmmd-batch: the reference's batch size (its dropped remainder); 0: every row
  bool cmmd_cache =
      true;             ///< each side's own CMMD term kept in the cache folder (--no-cmmd-cache: neither read nor kept)
  int isc_splits = 10;  ///< --isc-splits
  bool isc_shuffle = true;             ///< --no-isc-shuffle: the splits in stored order
  std::uint32_t isc_seed = 2020;       ///< --isc-seed: torch-fidelity's rng_seed
  int prc_k = 3;                       ///< --prc-k: torch-fidelity's prc_neighborhood
  int prdc_k = 5;                      ///< --prdc-k: prdc's nearest_k
  int kid_subsets = 100;               ///< --kid-subsets
  std::size_t kid_subset_size = 1000;  ///< --kid-subset-size
  std::uint64_t seed = 0;              ///< --seed: the KID subsets
  std::size_t row_block = 1024;        ///< --block-rows: rows of float64 distances at a time
  std::string json_out;                ///< --json FILE
  bool allow_mismatch = false;         ///< --allow-mismatch
  FidModelArgs m;
};
/// `vecbench metrics A [B]`: the Inception Score of A (from its stored pool_3 vectors and the
/// model's classifier), FID, KID, precision/recall and density/coverage of A against B, one line each.
int cmd_metrics(const MetricsArgs& args);
/// `vecbench verify OUT [--repair]`: every stored vector against its manifest line and checksum;
/// 0 all good, 2 some missing, truncated or corrupted (printed), `repair` moves their files aside.
int cmd_verify(const std::string& out, bool repair, double progress_s);
/// `vecbench predecode`: decodes and resizes once into a uint8 [N,S,S,3] .npy.
int cmd_predecode(const std::string& images, const std::string& out, const std::string& resize, int size);
/// `vecbench calibrate`'s settings.
struct CalibrateArgs {
  std::string images;  ///< --images: real photos like the ones int8 will vectorize
  std::string out;     ///< --out: the calibration file (JSON)
  std::string model = default_model();
  std::optional<ResizeMode> resize;                   ///< unset: the model's default
  std::size_t limit = 0;                              ///< --limit: the first N images only (0: all)
  CalibrationMethod method = CalibrationMethod::max;  ///< --method
};
/// `vecbench calibrate`: the activation ranges of the int8 route (engine/int8_calibration.hpp).
int cmd_calibrate(const CalibrateArgs& a);
/// `vecbench devices`: what each device spec expands to.
int cmd_devices(const std::vector<std::string>& specs);
/// `vecbench models`: the FID tools' weights found, their SHA-256 and models (app/fid_presets.hpp).
int cmd_models();
/// `vecbench model info`: the export's metadata of a model file.
int cmd_model_info(const std::string& path);
/// `vecbench run`'s repetition overrides (0: the experiment's).
struct RepetitionOverride {
  int fixed = 0;     ///< --repetitions: exactly this many, adaptive off
  int adaptive = 0;  ///< --max-repetitions: adaptive up to this many
};
/// `vecbench run`: an experiment file (empty: the embedded quick.json); writes its result file.
int cmd_run(const std::string& path, const std::string& results_dir, const std::string& model_override,
            RepetitionOverride reps, int argc, char** argv, bool trace = true);
/// `vecbench compare BASE NEW`: prints the verdict table; 0 no regression, 1 a run is SLOWER, 2
/// nothing could be compared, 3 none SLOWER but a run was noisy (results/compare.hpp).
int cmd_compare(const std::string& base, const std::string& next, const CompareOptions& opt);
/// `vecbench report FILES --out DIR`: report.md with scaling tables and the plots.
int cmd_report(const std::vector<std::string>& inputs, const std::string& out);
/// `vecbench trace summarize`: the busy / starved / blocked table of a trace file, per process.
int cmd_trace_summarize(const std::string& path);
/// `vecbench tune`'s settings.
struct TuneArgs {
  std::string images;                   ///< --images ("": a generated ImageNet-like set)
  std::string model;                    ///< --model ("": the build's, and its fused export)
  double budget_s = 180;                ///< --budget
  std::string results_dir = "results";  ///< --results
  bool save = false;                    ///< --save: the best fp32 route of the model as this machine's profile
  std::string calibration;              ///< --calibration: also the model's opt-in int8 route, ranked apart
};
/// `vecbench tune`: searches routes within a time budget and prints the winning command line (and
/// the best int8 one with a calibration); `save`: also writes the model's best fp32 route as this
/// machine's profile (app/route.hpp).
int cmd_tune(const TuneArgs& a, int argc, char** argv);

}  // namespace vecbench
