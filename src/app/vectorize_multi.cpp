// `vecbench vectorize --encoders inception-v3,dinov2-vit-l-14 --out OUT` (docs/encoders.md):
// several encoders from one decode. Each image is read and decoded once, resized once per encoder
// with that encoder's preset (input/input_layout.hpp), and run through every encoder on the same
// device (engine/multi_encoder.hpp); each encoder's vectors go into a store of their own, OUT/ENC,
// with its own fingerprint, manifest, checksums and lock, exactly the store a run of that encoder
// alone writes, so each resumes on its own and every reader (fid, metrics, verify) reads it as one.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "vecbench/app/commands.hpp"
#include "vecbench/app/fid_presets.hpp"
#include "vecbench/core/run/device.hpp"
#include "vecbench/engine/encoder.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/engine/multi_encoder.hpp"
#include "vecbench/pipeline/progress.hpp"
#include "vecbench/strategies/strategies.hpp"
#include "vectorize_parts.hpp"

namespace vecbench {
using namespace vectorize_detail;

namespace {

/// One encoder of the run: its preset's model and its own store.
struct EncoderRun {
  std::string encoder, tool;
  FidModelChoice choice;
  ModelInfo info;
  VectorizeArgs args;  ///< the run's arguments with this encoder's model, engine and OUT/ENC
  InputOptions in;     ///< with this encoder's resize (the fingerprint's)
  std::unique_ptr<OutputWriter> writer;
  std::vector<char> pending;  ///< per input: still to do in this store
};

/// Splits each composite vector into the encoders' stores; an input goes to a store only while
/// that store still has it to do (a resumed run's other stores may have it already).
class SplitSink : public ResultSink {
 public:
  explicit SplitSink(std::vector<EncoderRun>& runs) : runs_(runs) {}
  void on_features(std::size_t index, const float* f, int dim) override {
    int total = 0;  // checked before anything is written: a wrong width would slice every vector wrong
    for (const auto& r : runs_) total += r.info.feature_dim;
    if (total != dim)
      throw Error("SplitSink: a vector of " + std::to_string(dim) + " floats, not " + std::to_string(total));
    int col = 0;
    for (auto& r : runs_) {
      if (r.pending[index]) r.writer->on_features(index, f + col, r.info.feature_dim);
      col += r.info.feature_dim;
    }
  }
  void on_error(std::size_t index, const std::string& message) override {
    for (auto& r : runs_)
      if (r.pending[index]) r.writer->on_error(index, message);
  }

 private:
  std::vector<EncoderRun>& runs_;
};

/// What the flags allow with several encoders (each runs its preset's pipeline, in one process).
void check_encoders_args(const VectorizeArgs& a) {
  if (!a.encoder.empty()) throw ConfigError("--encoders", "and --encoder both name encoders: pass one of them");
  if (a.model.path != default_model())
    throw ConfigError("--encoders", "and --model: each encoder's model comes from its preset (ENC:TOOL)");
  if (a.resize) throw ConfigError("--resize", "with --encoders each encoder resizes as its preset does");
  if (a.fast_decode) throw ConfigError("--fast-decode", "with --encoders the images are decoded at full size");
  if (a.model.precision != Precision::fp32) throw ConfigError("--precision", "with --encoders every encoder is fp32");
  if (a.decode.where == DecodeWhere::gpu && !a.decode.automatic)
    throw ConfigError("--decode", "gpu: with --encoders the host decodes (each encoder's resize runs there)");
  if (current_distribution().active())
    throw ConfigError("--encoders",
                      "runs in one process: not under MPI or with --shard-index (run one encoder "
                      "per job, or the encoders one after the other)");
}

/// The encoders of `a.encoders` ("ENC" or "ENC:TOOL"), their models chosen and imported.
std::vector<EncoderRun> encoder_runs(const VectorizeArgs& a) {
  std::vector<EncoderRun> runs;
  std::set<std::string> seen;
  for (const std::string& spec : a.encoders) {
    EncoderRun r;
    const auto colon = spec.find(':');
    r.encoder = find_encoder(spec.substr(0, colon)).name;
    r.tool = colon == std::string::npos ? a.like : spec.substr(colon + 1);
    if (!seen.insert(r.encoder).second)
      throw ConfigError("--encoders", r.encoder + " is named twice (one store per encoder)");
    if (r.tool.empty() && r.encoder == "inception-v3") {  // as `vectorize` without --like: the build's model
      r.choice.path = a.model.path;
      r.choice.why = "the build's default model, as vectorize without --like (inception-v3:TOOL names a tool's)";
    } else {
      r.choice = choose_fid_model("", r.tool, r.encoder);
    }
    r.info = read_model_info(r.choice.path);
    if (!r.choice.preset) r.choice.preset = preset_of_model(r.info.like, r.info.arch);
    std::cerr << "vecbench: " << r.encoder << ": model " << r.choice.path << " (" << r.choice.why << ")\n";
    runs.push_back(std::move(r));
  }
  if (runs.empty()) throw ConfigError("--encoders", "names no encoder");
  const auto jpeg = [](const EncoderRun& r) { return r.choice.preset ? r.choice.preset->jpeg : JpegDecoder::exact; };
  for (const auto& r : runs)
    if (jpeg(r) != jpeg(runs.front()))
      throw ConfigError("--encoders", r.encoder + " and " + runs.front().encoder +
                                          " decode JPEGs differently (tf's DecodeJpeg and the exact decode): one "
                                          "decode cannot feed both; vectorize them in two runs");
  if (!a.decode.automatic && a.decode.jpeg != jpeg(runs.front()))  // as a single run refuses it
    throw ConfigError("--decode", std::string(decode_name(a.decode.where, a.decode.jpeg)) +
                                      ": the encoders' presets decode with --decode " +
                                      decode_name(DecodeWhere::cpu, jpeg(runs.front())));
  return runs;
}

/// Each encoder's engine: --engine when given (`flag`), else oneDNN for an export it runs
/// (onednn_runs_model) on a CPU-only route (`devices`), else LibTorch.
EngineKind engine_for(const std::optional<EngineKind>& flag, const std::string& devices, const ModelInfo& m,
                      Precision p) {
  if (flag) return *flag;
  const bool cpu_only = !DevicesSpec::parse(devices).any_cuda();
  return cpu_only && onednn_runs_here() && onednn_runs_model(m, p) ? EngineKind::onednn : EngineKind::torchscript;
}

/// The first lines: one per encoder (its model, resize, what its store has left, fingerprint), then the route.
void print_start(const VectorizeArgs& base, const std::vector<EncoderRun>& runs, const ImageSource& src,
                 std::size_t todo, const std::vector<VirtualDevice>& devs, const std::string& origin) {
  std::ostringstream line;
  for (const auto& r : runs) {
    const std::size_t left = static_cast<std::size_t>(std::count(r.pending.begin(), r.pending.end(), 1));
    const std::string note = r.info.weight_source.note();
    line << "vecbench: " << r.args.out << ": " << r.encoder << " ("
         << (r.choice.preset ? r.choice.preset->name : std::string("no preset")) << "; "
         << (note.empty() ? r.info.weight_source.text() : note) << "), resize " << to_string(r.in.resize) << ", engine "
         << to_string(r.args.model.engine) << ": " << left << " to do, " << src.size() - left
         << " already done; fingerprint " << r.writer->fingerprint_id() << "\n";
  }
  line << "vecbench: " << src.size() << " inputs (" << to_string(src.kind()) << "), " << todo
       << " to do in one or more stores, each decoded once for " << runs.size() << " encoders; strategy "
       << base.strategy << " on " << base.devices << " =";
  for (const auto& d : devs) line << " " << d.name() << "(" << d.threads << " thr)";
  line << ", batch " << base.batch << ", decode threads " << base.decode_threads << " (route from " << origin << ")\n";
  std::cerr << line.str() << std::flush;
}

/// The exit status and the summary line of the run (stdout), with each store's failures.
int finish_encoders(std::vector<EncoderRun>& runs, const RunStats& st, const ImageSource& src, std::size_t todo) {
  std::size_t failed = st.images_failed, lost = 0;
  std::string aborted;
  StopKind abort_kind = StopKind::none;
  std::exception_ptr first;  // every store finished (its manifest on disk) before an error is reported
  for (auto& r : runs) {
    try {
      r.writer->finish();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
    lost = std::max(lost, r.writer->implausible() + r.writer->write_failures());
    if (aborted.empty() && !r.writer->abort_reason().empty()) {
      aborted = r.args.out + ": " + r.writer->abort_reason();
      abort_kind = r.writer->abort_kind();
    }
    if (r.writer->write_failures() > 0)
      std::cerr << "vecbench: " << r.args.out << ": " << r.writer->write_failures() << " outputs not written ("
                << r.writer->first_write_error() << "): a rerun does them once there is room\n";
  }
  if (first) std::rethrow_exception(first);
  const std::size_t ok = st.images_ok - std::min(lost, st.images_ok);
  failed += std::min(lost, st.images_ok);
  const bool interrupted = stop_flag() && aborted.empty();
  std::printf("vectorize images=%zu ok=%zu failed=%zu skipped=%zu wall_s=%.3f img_per_s=%.3f encoders=%zu%s\n",
              src.size(), ok, failed, src.size() - todo, st.wall_s, st.images_per_s(), runs.size(),
              interrupted ? " (interrupted)" : "");
  if (!aborted.empty()) {
    std::cerr << "vecbench: stopped early: " << aborted << " (a rerun does the rest)\n";
    return ok == 0 || abort_kind == StopKind::broken_model ? kExitError : kExitSomeInputsFailed;
  }
  return interrupted ? kExitInterrupted : failed > 0 ? kExitSomeInputsFailed : 0;
}

}  // namespace

int cmd_vectorize_encoders(const VectorizeArgs& args, const CommandHooks& hooks) {
  check_encoders_args(args);
  std::vector<EncoderRun> runs = encoder_runs(args);
  VectorizeArgs base = args;
  base.no_profile = true;  // a machine profile is of one model
  const int cuda = cuda_device_count();
  const std::string origin = resolve_route(base, runs.front().info, hardware_cores(), cuda);
  const StrategyEntry& strategy = find_strategy(base.strategy);
  DeviceOptions dopt;
  dopt.threads_per_replica = base.threads;
  dopt.cuda_devices = cuda;
  dopt.memory_cap_gb = base.memory_cap_gb;
  const auto devs = expand_devices(base.devices, dopt);
  InputOptions in = input_options(base, runs.front().info);
  in.jpeg_decoder = runs.front().choice.preset ? runs.front().choice.preset->jpeg : JpegDecoder::exact;
  in.decode_where = DecodeWhere::cpu;
  for (const auto& r : runs)
    in.layout.parts.push_back({r.info.input_size, r.choice.preset ? r.choice.preset->resize : r.info.resize_default});
  std::vector<std::string> models;
  for (const auto& r : runs) models.push_back(r.choice.path);
  check_replicas_fit(devs, hardware_cores(), models, base.force);  // every replica holds every encoder
  auto source = make_source(base.images, in);
  std::vector<ModelFactory> factories;
  std::vector<char> any(source->size(), 0);
  for (std::size_t k = 0; k < runs.size(); ++k) {  // every store checked and opened before the first forward
    EncoderRun& r = runs[k];
    r.args = base;
    r.args.out = (fs::path(base.out) / r.encoder).string();
    r.args.model.path = r.choice.path;
    r.args.model.engine = engine_for(args.engine, base.devices, r.info, base.model.precision);
    r.in = in;
    r.in.layout = {};
    r.in.resize = in.layout.parts[k].mode;
    factories.push_back(model_factory(r.args.model));
    r.writer =
        std::make_unique<OutputWriter>(*source, writer_options(r.args, r.info, r.in, *source, current_distribution()));
    r.pending.assign(source->size(), 0);
    for (const std::size_t i : r.writer->pending()) r.pending[i] = any[i] = 1;
  }
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < any.size(); ++i)
    if (any[i]) todo.push_back(i);
  if (!base.quiet) print_start(base, runs, *source, todo.size(), devs, origin);
  SplitSink split(runs);
  std::unique_ptr<ResultSink> wrapped = hooks.wrap_writer ? hooks.wrap_writer(split, current_distribution()) : nullptr;
  ProgressOptions po;
  po.interval_s = base.quiet ? 0 : base.progress_s;
  po.terminal = ::isatty(STDERR_FILENO) != 0;
  ProgressSink progress(wrapped ? *wrapped : static_cast<ResultSink&>(split), todo.size(), po, std::cerr);
  RunSettings s = run_settings(base, args.decode_threads == 0, current_distribution(), devs);
  RunStats st;
  if (!todo.empty())
    st = run_strategy(strategy, *source, todo, devs, multi_encoder_factory(std::move(factories), in.layout), progress,
                      s, in.layout.side());
  progress.stop();
  return finish_encoders(runs, st, *source, todo.size());
}

}  // namespace vecbench
