// `vecbench vectorize`: images to vectors in an output folder (the store), with progress.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "vecbench/app/commands.hpp"
#include "vecbench/app/fid_presets.hpp"
#include "vecbench/app/route.hpp"
#include "vecbench/core/run/device.hpp"
#include "vecbench/dist/job_progress.hpp"
#include "vecbench/dist/merge_manifests.hpp"
#include "vecbench/dist/rank_gather.hpp"
#include "vecbench/engine/encoder.hpp"
#include "vecbench/engine/engines.hpp"
#include "vecbench/input/inputs.hpp"
#include "vecbench/output/writer.hpp"
#include "vecbench/pipeline/progress.hpp"
#include "vecbench/results/trace_json.hpp"
#include "vectorize_parts.hpp"
#ifdef VECBENCH_WITH_ONEDNN
#include "vecbench/engine/onednn_inception.hpp"
#endif

namespace vecbench {
namespace vectorize_detail {

/// What makes this run's vectors (the output folder's fingerprint).
Fingerprint vectorize_fingerprint(const VectorizeArgs& a, const ModelInfo& model, const InputOptions& in,
                                  const ImageSource& source) {
  FingerprintFields f;
  f.model_sha256 = model.identity();
  f.model_arch = model.is_export() ? model.arch : "?";
  f.input_size = model.input_size;
  f.feature_dim = model.feature_dim;
  f.resize = to_string(in.resize);
  f.exif = to_string(a.exif);
  f.fast_decode = a.fast_decode;
  f.jpeg_decoder = in.jpeg_decoder;
  f.decode_where = in.decode_where;
  f.arithmetic = a.model.engine == EngineKind::none ? "none" : to_string(a.model.precision);
  // int8: the scheme's version, the kernels' ISA (AVX2-VNNI and AVX-512 VNNI kernels round apart:
  // ~3 % of a vector) and the calibration (checked by cmd_vectorize before anything is written).
  // v2: the first layer by vecbench's kernel (AVX-512), whose sums round a rare u8 step apart
  // from oneDNN's f32 layer: a few percent of an int8 vector (results/int8/first-layer-20261203.md);
  // v3: and the poolings by vecbench's kernels (the pool branches' 1x1 layer first: one rounding
  // fewer; results/int8/own-pooling-20261204.md)
  if (a.model.engine != EngineKind::none && a.model.precision == Precision::int8) {
#ifdef VECBENCH_WITH_ONEDNN
    f.arithmetic += cpu_route(Precision::int8, a.model.own_first_layer, a.model.own_pooling).fingerprint_words();
#endif
    f.arithmetic += " calibration " + a.model.calibration_sha256.substr(0, 16);
  }
  // bf16 on oneDNN's AMX kernels rounds apart from its AVX-512 BF16 ones (1 % of a vector at the
  // median: results/levers/bf16-amx-20261203.md): named, so that the two never share a folder
  // (the AVX-512 kernels keep plain "bf16", as before AMX ran); " v2": and its first layer by
  // vecbench's kernel (1-2 % from the oneDNN layer's vectors); " v3": and its poolings by
  // vecbench's kernels (features in float where oneDNN's last pool rounded them to bf16)
#ifdef VECBENCH_WITH_ONEDNN
  if (a.model.engine == EngineKind::onednn && a.model.precision == Precision::bf16)
    f.arithmetic += cpu_route(Precision::bf16, a.model.own_first_layer, a.model.own_pooling).fingerprint_words();
#endif
  f.like = model.like;
  f.source = to_string(source.kind());
  if (const auto* syn = dynamic_cast<const SyntheticSource*>(&source))
    f.source += " seed " + std::to_string(syn->seed());
  Fingerprint fp = make_fingerprint(f);
  fp.weight_source = model.weight_source;
  return fp;
}

/// Whether the oneDNN engine runs on this CPU (built with it, and oneDNN has AVX2 code or better).
bool onednn_runs_here() {
#ifdef VECBENCH_WITH_ONEDNN
  return cpu_route(Precision::fp32).runs();
#else
  return false;
#endif
}

bool onednn_runs_model(const ModelInfo& m, Precision p) {
  return m.is_export() && (inception_arch(m.arch) || (vit_arch(m.arch) && p == Precision::fp32));
}

/// Fills the route fields the flags left open (engine, strategy, devices, batch, threads, decode
/// threads) from this machine's profile, else from the defaults; returns where they came from.
std::string resolve_route(VectorizeArgs& a, const ModelInfo& model, int cores, int cuda) {
  RouteChoice flags{a.engine, a.strategy, a.devices, a.batch, a.threads, a.decode_threads};
  const bool engine_flag = a.engine.has_value();
  RouteFacts facts;
  facts.cores = cores;
  facts.cuda_devices = cuda;
  facts.onednn_available = onednn_runs_here();
  facts.model_is_export = onednn_runs_model(model, a.model.precision);
  facts.precision = a.model.precision;
  std::optional<RouteChoice> profile;
  std::string file;
  if (!a.no_profile) {
    const std::string sha = model.identity();
    file = profile_path(machine_key(sha, cuda));
    std::string why;
    profile = load_profile(file, machine_key(sha, cuda), &why);
    if (!why.empty()) std::cerr << "vecbench: profile " << why << "\n";
  }
  std::string origin = merge_route(flags, profile, file, default_route(facts));
  // int8 is the oneDNN engine's (a profile's torchscript route would refuse it)
  if (!engine_flag && a.model.precision == Precision::int8) flags.engine = EngineKind::onednn;
  // Devices from a flag may rule out the chosen engine: oneDNN runs on CPUs only.
  if (!engine_flag && flags.engine == EngineKind::onednn && DevicesSpec::parse(flags.devices).any_cuda())
    flags.engine = EngineKind::torchscript;
  a.engine = flags.engine;
  a.model.engine = flags.engine.value_or(EngineKind::torchscript);
  a.strategy = flags.strategy;
  a.devices = flags.devices;
  a.batch = flags.batch;
  a.threads = flags.threads;
  a.decode_threads = flags.decode_threads;
  return origin;
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

/// Refuses (without --force) more CPU replicas than cores, or than the memory holds: a TorchScript
/// replica holds its own copy of the network (~2.5x the model file: weights, packed weights and
/// activations; oneDNN replicas share their packed weights, so this is an upper bound for them).
void check_replicas_fit(const std::vector<VirtualDevice>& devs, int cores, const std::vector<std::string>& models,
                        bool force) {
  if (force) return;
  const auto n =
      static_cast<int>(std::count_if(devs.begin(), devs.end(), [](auto& d) { return d.kind == DeviceKind::cpu; }));
  if (n == 0) return;
  std::uint64_t per = 0;
  for (const auto& model : models) {
    std::error_code ec;
    const auto file = fs::file_size(model, ec);
    per += ec ? 0 : file * 5 / 2;
  }
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

/// The end of the job on every rank: rank 0 gathers every rank's figures, writes the merged
/// manifest.jsonl (connected ranks, when outputs are written), and decides one exit status for
/// all.
struct VectorizeTotals {
  nlohmann::json sample;  ///< the combined sample (result schema, with "ranks" when several)
  std::size_t ok = 0, failed = 0;
  double wall_s = 0, images_per_s = 0;
  bool interrupted = false;
  int exit_code = 0;  ///< 0 all ok, 2 some inputs failed, 130 interrupted (the same on every rank)
  std::optional<ManifestMerge> merged;
};

VectorizeTotals finish_vectorize(const Distribution& dist, const RunStats& st, long chunks, bool interrupted,
                                 const fs::path& out_dir, bool outputs, const ImageSource& src) {
  VectorizeTotals t;
  if (!dist.active()) {
    t.sample = run_stats_json(st);
  } else {
    RankReport mine;
    mine.stats = &st;
    mine.chunks = chunks;
    mine.interrupted = interrupted;
    const RankIdentity who{dist.rank(), dist.size(), dist.host(), dist.mode(), dist.label()};
    if (const auto g = gather_ranks(dist.comm(), who, mine)) {
      t.sample = g->sample;
      t.interrupted = g->interrupted;
    }
  }
  if (dist.comm().leader()) {
    t.interrupted = t.interrupted || interrupted;
    t.ok = t.sample.value("images", std::size_t{0});
    t.failed = t.sample.value("failed", std::size_t{0});
    t.wall_s = t.sample.value("wall_s", 0.0);
    t.images_per_s = t.sample.value("images_per_s", 0.0);
    t.exit_code = t.interrupted ? kExitInterrupted : t.failed > 0 ? kExitSomeInputsFailed : 0;
    if (outputs && dist.active() && dist.comm().connected()) {
      std::vector<std::string> order(src.size());
      for (std::size_t i = 0; i < src.size(); ++i) order[i] = src.name(i);
      t.merged = merge_manifests({out_dir}, out_dir, order);
    }
  }
  if (dist.active() && dist.comm().connected())
    t.exit_code = std::stoi(dist.comm().broadcast(std::to_string(t.exit_code)));
  return t;
}

InputOptions input_options(const VectorizeArgs& a, const ModelInfo& model) {
  InputOptions in;
  in.resize = a.resize ? *a.resize : model.resize_default;
  in.fast_decode = a.fast_decode;
  in.exif = a.exif;
  in.jpeg_decoder = a.decode.jpeg;
  in.lenient_decode = a.lenient_decode;
  in.max_pixels = a.max_pixels;
  return in;
}

WriterOptions writer_options(const VectorizeArgs& a, const ModelInfo& model, const InputOptions& in,
                             const ImageSource& source, const Distribution& dist) {
  WriterOptions w;
  w.format = a.format;
  w.out_dir = a.out;
  w.shard_rows = a.shard_rows;
  w.resume = !a.no_resume;
  w.fingerprint = vectorize_fingerprint(a, model, in, source);
  w.replace_fingerprint = a.replace_fingerprint;
  w.feature_dim = model.feature_dim;
  w.hash_inputs = a.hash_inputs;
  w.check_features = true;  // no NaN, Inf, negative or huge vector is ever stored as ok
  const EncoderSpec* enc = encoder_of_arch(model.arch);
  w.non_negative_features = !enc || enc->non_negative;
  w.stop = &stop_flag();  // a full disk or a broken model ends the run early (abort_reason)
  if (dist.active()) {    // per-rank files; only rank 0 cleans up and scans what is done (MPI)
    w.rank = dist.rank();
    w.stale_temp_age_s = !dist.comm().connected() ? 600 : dist.rank() == 0 ? 0 : -1;
    if (dist.comm().connected() && dist.rank() != 0) w.resume = false;
  }
  return w;
}

/// The first line: inputs, what is left to do, model, route, fingerprint (one write: ranks share
/// stderr).
std::string start_line(const VectorizeArgs& a, const std::string& route_origin, const ModelInfo& model,
                       const InputOptions& in, const ImageSource& source, const Distribution& dist, std::size_t todo,
                       std::size_t share, const std::vector<VirtualDevice>& devs, const OutputWriter& writer,
                       OutputFormat format) {
  std::ostringstream line;
  line << "vecbench: " << (dist.active() ? dist.label() + ": " : "") << source.size() << " inputs ("
       << to_string(source.kind()) << "), " << todo << " to do, " << (share - todo) << " already done";
  if (dist.active())
    line << " (" << dist.size() << " " << (dist.comm().connected() ? "ranks, " + dist.mode() : "shards") << ")";
  const std::string weights = model.weight_source.known() ? model.weight_source.text() : "?",
                    note = model.weight_source.note();
  line << "; model " << (model.is_export() ? model.arch : "?") << " (" << (note.empty() ? weights : note)
       << "), resize " << to_string(in.resize)
       << (in.decode_where == DecodeWhere::gpu  ? ", JPEG decode gpu (nvJPEG)"
           : in.jpeg_decoder == JpegDecoder::tf ? ", JPEG decode tf"
                                                : "")
       << "; engine " << to_string(a.model.engine) << ", strategy " << a.strategy << " on " << a.devices << " =";
  for (const auto& d : devs) line << " " << d.name() << "(" << d.threads << " thr)";
  line << ", batch " << a.batch << ", decode threads " << a.decode_threads << " (route from " << route_origin << ")";
  if (source.duplicates_skipped() > 0) line << "; " << source.duplicates_skipped() << " duplicate inputs skipped";
  if (writer.changed_inputs() > 0)
    line << "; " << writer.changed_inputs() << " changed since their vectors were made (redone)";
  if (format != OutputFormat::none) line << "; fingerprint " << writer.fingerprint_id();
  line << "\n";
  return line.str();
}

/// Outputs computed but not stored (disk full, permissions, an implausible vector) are failed
/// inputs, not ok ones: moved from `st`'s ok count to its failed count, and said once.
void count_unwritten_outputs(const OutputWriter& writer, const Distribution& dist, RunStats& st) {
  const std::size_t implausible = std::min(writer.implausible(), st.images_ok);
  st.images_ok -= implausible;
  st.images_failed += implausible;
  const std::size_t unwritten = std::min(writer.write_failures(), st.images_ok);
  if (unwritten == 0) return;
  st.images_ok -= unwritten;
  st.images_failed += unwritten;
  std::cerr << "vecbench: " + (dist.active() ? dist.label() + ": " : std::string()) + std::to_string(unwritten) +
                   " outputs not written (" + writer.first_write_error() +
                   "): counted as failed; a rerun does them once there is room\n"
            << std::flush;
}

/// The writer stopped the run (`why`): said with what was left undone; exit 1 when nothing was
/// stored (or the model is broken), else 2 (some inputs failed, a rerun does the rest).
int stopped_early(const std::string& why, StopKind kind, std::size_t todo, const RunStats& st,
                  const Distribution& dist) {
  const std::size_t started = st.images_ok + st.images_failed;
  std::cerr << "vecbench: " + (dist.active() ? dist.label() + ": " : std::string()) + "stopped early: " + why + "; " +
                   std::to_string(todo > started ? todo - started : 0) + " of the " + std::to_string(todo) +
                   " inputs to do were not started (a rerun does them)\n"
            << std::flush;
  return st.images_ok == 0 || kind == StopKind::broken_model ? kExitError : kExitSomeInputsFailed;
}

/// Rank 0's summary line (stdout) and notes (stderr) at the end of the job.
void print_totals(const VectorizeArgs& a, const Distribution& dist, const VectorizeTotals& tot,
                  const ImageSource& source, std::size_t todo, std::size_t share, const OutputWriter& writer,
                  OutputFormat format) {
  std::string where;
  if (dist.active())
    where = dist.comm().connected() ? " ranks=" + std::to_string(dist.size())
                                    : " shard=" + std::to_string(dist.rank()) + "/" + std::to_string(dist.size());
  std::printf("vectorize images=%zu ok=%zu failed=%zu skipped=%zu wall_s=%.3f img_per_s=%.3f%s%s\n",
              dist.active() && !dist.comm().connected() ? share : source.size(), tot.ok, tot.failed, share - todo,
              tot.wall_s, tot.images_per_s, where.c_str(), tot.interrupted ? " (interrupted)" : "");
  std::ostringstream notes;  // one write: the other ranks' last lines share stderr
  if (tot.merged)
    for (const auto& note : tot.merged->notes) notes << note << "\n";
  if (tot.merged)
    notes << "vecbench: " << (fs::path(a.out) / "manifest.jsonl").string() << ": " << tot.merged->inputs << " inputs ("
          << tot.merged->ok << " ok, " << tot.merged->errors << " failed) merged from " << tot.merged->files.size()
          << " manifests\n";
  else if (dist.active() && format != OutputFormat::none)
    notes << "vecbench: when every shard is done: vecbench merge " << a.out << "\n";
  if (writer.warned() > 0)
    notes << "vecbench: " << writer.warned()
          << " inputs decoded with decoder warnings (--lenient-decode): their manifest lines say which\n";
  std::cerr << notes.str() << std::flush;
}

/// --trace FILE: the trace as Chrome trace-event JSON (FILE, or FILE-rankR.json on rank R > 0 /
/// shard R of several), and its busy / starved / blocked table on stderr.
void write_vectorize_trace(const Trace& t, const std::string& file, const Distribution& dist, bool quiet) {
  fs::path path = file;
  if (dist.active() && dist.rank() > 0)
    path.replace_filename(path.stem().string() + "-rank" + std::to_string(dist.rank()) + path.extension().string());
  save_trace(path, t);
  if (!quiet) std::cerr << "vecbench: trace " << path.string() << "\n" << trace_figures_markdown(trace_figures(t));
}

/// `--calibration` only with int8; int8: the calibration read once, here (the engine refuses the
/// file if it changes before it starts, so the fingerprint names what ran).
void check_int8_settings(ModelSettings& m) {
  if (!m.calibration.empty() && m.precision != Precision::int8)
    throw ConfigError("--calibration", "is for --precision int8 only");
  if (m.precision == Precision::int8) m.calibration_sha256 = checked_int8_calibration(m).sha256;
}

/// --like TOOL: that tool's model (its weights found and imported, app/fid_presets.hpp). A model
/// of a FID tool's preset (--like, or a --model exported with --like) runs that tool's pipeline
/// only: a setting that changes it is refused, naming it.
VectorizeArgs with_preset(const VectorizeArgs& args) {
  VectorizeArgs a = args;
  if (a.like.empty() && (a.encoder.empty() || a.encoder == "inception-v3")) return a;
  if (a.model.path != default_model())
    throw ConfigError(a.like.empty() ? "--encoder" : "--like", "and --model name two models: pass one of them");
  const FidModelChoice c = choose_fid_model("", a.like, a.encoder);
  std::cerr << "vecbench: model " << c.path << " (" << c.why << ")\n";
  a.model.path = c.path;
  return a;
}

/// A model of a FID tool's preset runs that tool's pipeline: its JPEG decode, on the host, unless
/// --decode names another (refused, as is every other setting that changes the pipeline).
void apply_preset_pipeline(VectorizeArgs& a, const ModelInfo& model) {
  const FidPreset* p = preset_of_model(model.like, model.arch);
  if (!p) return;
  const std::string what = model.path + " follows " + p->name + "'s pipeline (" + p->pipeline + ")";
  if (a.resize && *a.resize != p->resize)
    throw ConfigError("--resize", to_string(*a.resize) + ": " + what + ", whose resize is " + to_string(p->resize));
  if (a.fast_decode) throw ConfigError("--fast-decode", what + ": its JPEGs are decoded at full size");
  const DecodeSetting tool{false, DecodeWhere::cpu, p->jpeg};
  if (!a.decode.automatic && (a.decode.where != tool.where || a.decode.jpeg != tool.jpeg))
    throw ConfigError("--decode", std::string(decode_name(a.decode.where, a.decode.jpeg)) + ": " + what +
                                      ", whose decode is --decode " + decode_name(tool.where, tool.jpeg));
  a.decode = tool;
  if (a.model.precision != Precision::fp32)
    throw ConfigError("--precision", std::string(to_string(a.model.precision)) + ": " + what + ", in fp32");
}

/// The run's settings from the resolved arguments; `route_decoders`: the decode threads come from
/// the route, not a flag (one more whenever the devices wait for input).
RunSettings run_settings(const VectorizeArgs& a, bool route_decoders, const Distribution& dist,
                         const std::vector<VirtualDevice>& devs) {
  RunSettings s;
  s.batch_size = a.batch;
  s.decode_threads = a.decode_threads;
  s.max_decode_threads = route_decoders ? (dist.active() ? dist.cpu_cores() : hardware_cores()) : 0;
  s.prefetch_batches = a.prefetch;
  s.warmup_batches = a.warmup;
  s.overlap_setup = true;                 // data-parallel: decoding fills the queue while the replicas build
  s.host_memory = host_memory_for(devs);  // CUDA: pinned batch buffers, copied with no staging
  s.stop = &stop_flag();
  return s;
}

}  // namespace vectorize_detail
using namespace vectorize_detail;

int cmd_vectorize(const VectorizeArgs& args, const CommandHooks& hooks) {
  if (!args.encoders.empty()) return cmd_vectorize_encoders(args, hooks);
  VectorizeArgs a = with_preset(args);
  const ModelInfo model = read_model_info(a.model.path);
  apply_preset_pipeline(a, model);
  const Distribution& dist = current_distribution();
  const int cuda = cuda_device_count();
  const std::string route_origin = resolve_route(a, model, dist.active() ? dist.cpu_cores() : hardware_cores(), cuda);
  check_int8_settings(a.model);
  const StrategyEntry& strategy = find_strategy(a.strategy);  // the strategy's name, parsed once
  DeviceOptions dopt;  // devices first: a refused device spec leaves OUT untouched
  dopt.threads_per_replica = a.threads;
  dopt.cuda_devices = cuda;
  dopt.memory_cap_gb = a.memory_cap_gb;
  if (dist.active()) dopt.cpu_cores = dist.cpu_cores();
  const auto devs = expand_devices(a.devices, dopt);
  InputOptions in = input_options(a, model);
  in.decode_where =
      resolve_decode(a.decode, all_cuda(devs), nvjpeg_available(), a.devices, !host_only_resize(in.resize));
  auto source = make_source(a.images, in);
  const WriterOptions w = writer_options(a, model, in, *source, dist);
  check_replicas_fit(devs, dist.active() ? dist.cpu_cores() : hardware_cores(), {a.model.path}, a.force);
  // The engine before OUT: one that needs LibTorch opens it here (engine/torch_plugin.hpp), so a
  // missing library refuses the run before anything is written; the oneDNN engine loads nothing yet.
  ModelFactory factory = model_factory(a.model);
  OutputWriter writer(*source, w);
  std::size_t share = source->size();
  auto todo = dist.todo(writer.pending(), source->size(), &share);
  RunSettings s = run_settings(a, args.decode_threads == 0, dist, devs);
  std::unique_ptr<Trace> trace;  // --trace FILE: every thread's spans, written after the run
  if (!a.trace_file.empty())
    s.trace = (trace = std::make_unique<Trace>(
                   dist.rank(), "vecbench vectorize" + (dist.active() ? " " + dist.label() : std::string())))
                  .get();
  if (!a.quiet)
    std::cerr << start_line(a, route_origin, model, in, *source, dist, todo.size(), share, devs, writer, w.format)
              << std::flush;
  RunStats st;
  long chunks = -1;
  std::unique_ptr<ResultSink> wrapped = hooks.wrap_writer ? hooks.wrap_writer(writer, dist) : nullptr;
  ResultSink* sink = wrapped ? wrapped.get() : &writer;
  ProgressOptions po;  // rank 0 of an MPI job shows the job's counts; the other ranks send theirs
  po.interval_s = a.quiet || (dist.comm().connected() && !dist.comm().leader()) ? 0 : a.progress_s;
  po.terminal = ::isatty(STDERR_FILENO) != 0;
  if (dist.active()) po.label = dist.label() + ": ";
  JobProgress job(dist.comm());
  if (!a.quiet && a.progress_s > 0) job.hook(po);
  ProgressSink progress(*sink, todo.size(), po, std::cerr);
  if (!todo.empty())  // one process runs the strategy itself; ranks and shards take their share
    st = dist.active() ? dist.run(strategy, *source, todo, devs, factory, progress, s, model.input_size, &chunks)
                       : run_strategy(strategy, *source, todo, devs, factory, progress, s, model.input_size);
  progress.stop();
  if (!a.quiet && st.decode_threads > static_cast<std::size_t>(a.decode_threads))
    std::cerr << "vecbench: " + (dist.active() ? dist.label() + ": " : std::string()) +
                     "the devices waited for input, so decoding grew from " + std::to_string(a.decode_threads) +
                     " to " + std::to_string(st.decode_threads) + " threads (--decode-threads N fixes the count)\n"
              << std::flush;
  writer.finish();
  count_unwritten_outputs(writer, dist, st);
  if (trace) write_vectorize_trace(*trace, a.trace_file, dist, a.quiet);
  // The writer's stop (a full disk, a broken model) is not the user's interrupt.
  const std::string aborted = writer.abort_reason();
  const auto tot = finish_vectorize(dist, st, chunks, stop_flag() && aborted.empty(), a.out,
                                    w.format != OutputFormat::none, *source);
  if (po.remote) job.drain();  // rank 0: the other ranks' last counts, sent before the gather
  if (!dist.comm().leader()) {
    std::fprintf(stderr, "vecbench: %s: ok=%zu failed=%zu wall_s=%.3f img_per_s=%.3f\n", dist.label().c_str(),
                 st.images_ok, st.images_failed, st.wall_s, st.images_per_s());
    return tot.exit_code;
  }
  print_totals(a, dist, tot, *source, todo.size(), share, writer, w.format);
  if (!a.json_out.empty()) atomic_write(a.json_out, tot.sample.dump(2) + "\n");
  return aborted.empty() ? tot.exit_code : stopped_early(aborted, writer.abort_kind(), todo.size(), st, dist);
}

}  // namespace vecbench
