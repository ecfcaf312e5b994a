// The experiment runner's executor: runs the planned repetitions (this process, or every rank of
// a multi-process job), checks features against the sequential reference, and assembles the
// result file.
#include "vecbench/experiment/experiment_runner.hpp"

#include "result_assembly.hpp"

#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "vecbench/core/base/strategy_name.hpp"
#include "vecbench/core/system/host.hpp"
#include "vecbench/core/system/machine_load.hpp"
#include "vecbench/dist/rank_gather.hpp"
#include "vecbench/experiment/external.hpp"
#include "vecbench/experiment/plan.hpp"
#include "vecbench/experiment/schedule.hpp"
#include "vecbench/experiment/verify.hpp"
#include "vecbench/output/writer.hpp"
#include "vecbench/results/run_json.hpp"
#include "vecbench/results/trace_json.hpp"
#include "vecbench/strategies/runner.hpp"

namespace vecbench {
namespace {

/// What this process measured of one repetition of a matrix run.
struct LocalOutcome {
  RunStats stats;                            ///< this process's figures
  long chunks = -1;                          ///< dynamic mode: chunks this rank got
  std::string error;                         ///< multi-process: this rank's error, reported by rank 0
  std::optional<Verification> verification;  ///< first repetition, verify on: against the reference
  std::optional<TraceFigures> trace;         ///< traced: the figures of this process's trace
  std::optional<LoadShares> load;            ///< what other processes and steal took meanwhile
};

#ifdef VECBENCH_INJECT_SLOWDOWN
/// A regression put in on purpose, to show that the CI regression stage calls it SLOWER (docs/experiments.md
/// "Validity"): CMake's -DVECBENCH_INJECT_SLOWDOWN=STRATEGY:PCT compiles it into this file only,
/// never into a release. Each forward of STRATEGY's replicas is followed by a busy wait of PCT %
/// of its own time: real CPU work, which the load probe does not see as another process.
class SlowedModel : public Model {
 public:
  SlowedModel(std::unique_ptr<Model> m, double pct) : m_(std::move(m)), pct_(pct) {}
  int feature_dim() const override { return m_->feature_dim(); }
  int input_size() const override { return m_->input_size(); }
  ForwardTiming forward(const float* in, int n, float* out) override {
    const auto t0 = Clock::now();
    const ForwardTiming t = m_->forward(in, n, out);
    const auto until = t0 + (Clock::now() - t0) * (1.0 + pct_ / 100.0);
    while (Clock::now() < until) {
    }
    return t;
  }
  void prepare(int max_batch) override { m_->prepare(max_batch); }
  std::size_t peak_memory_bytes() const override { return m_->peak_memory_bytes(); }

 private:
  std::unique_ptr<Model> m_;
  double pct_;
};

ModelFactory injected_slowdown(const std::string& strategy, ModelFactory f) {
  const std::string spec = VECBENCH_INJECT_SLOWDOWN;
  const auto colon = spec.find(':');
  if (spec.substr(0, colon) != strategy) return f;
  const double pct = std::stod(spec.substr(colon + 1));
  return
      [f, pct](const VirtualDevice& d) -> std::unique_ptr<Model> { return std::make_unique<SlowedModel>(f(d), pct); };
}
#else
ModelFactory injected_slowdown(const std::string&, ModelFactory f) { return f; }
#endif

/// The machine's load during a repetition, into its sample.
void record_load(Sample& s, const std::optional<LoadShares>& load) {
  if (!load) return;
  s.foreign_cpu_share = load->foreign_cpu;
  s.steal_share = load->steal;
}

class Executor {
 public:
  Executor(const Experiment& e, const ExperimentEnv& env)
      : e_(e), env_(env), log_(*env.log), dist_(env.dist && env.dist->active() ? env.dist : nullptr) {}

  const ImageSource& source_for(ResizeMode m) {
    auto& s = sources_[m];
    if (!s) s = env_.make_source(m);
    return *s;
  }
  ResizeMode resolve_resize(std::optional<ResizeMode> r) const { return r.value_or(env_.model_resize); }
  /// A matrix run's devices on this machine (`threads` per replica; 0: the cores split).
  std::vector<VirtualDevice> expand(const DevicesSpec& spec, int threads) const {
    DeviceOptions o;
    o.threads_per_replica = threads;
    o.cuda_devices = env_.cuda_devices;
    o.cpu_cores = env_.cpu_cores;
    o.memory_cap_gb = e_.memory_cap_gb;
    return spec.expand(o);
  }
  const Distribution* dist() const { return dist_; }
  bool talk() const { return dist_ && dist_->comm().connected(); }

  void run_external(PlannedRun& p, int rep);
  /// Runs repetition `rep` of matrix run `p` (the `index`-th of the plan) and records it.
  void run_matrix(PlannedRun& p, std::size_t index, int rep);

 private:
  LocalOutcome run_local(PlannedRun& p, std::size_t index, int rep);
  std::string trace_process_name(const PlannedRun& p, int rank) const;
  /// The figures of a repetition's trace; the first repetition's is written to env.trace_dir.
  TraceFigures record_trace(const Trace& t, std::size_t index, int rep, int rank) const;
  const MemorySink& reference(ResizeMode m, const MemorySink& got);
  bool is_reference_run(const RunParams& p) const;

  const Experiment& e_;
  const ExperimentEnv& env_;
  std::ostream& log_;
  const Distribution* dist_;
  std::map<ResizeMode, std::unique_ptr<ImageSource>> sources_;
  /// The reference features per resize mode (sequential, one CPU device, batch 1, TorchScript,
  /// fp32): the first repetition of a matrix run that is exactly that, or else an extra untimed
  /// pass with the reference factory.
  std::map<ResizeMode, std::unique_ptr<MemorySink>> refs_;
  /// keep_replicas: each matrix run's pool (by its index in the plan), made by its first
  /// repetition and kept for the others.
  std::map<std::size_t, std::unique_ptr<ReplicaPool>> pools_;
};

/// A matrix run stands in for the reference pass only when it runs exactly what that pass runs:
/// sequential on one CPU device at batch 1, the TorchScript engine in fp32 as exported. Any
/// other engine or precision (a oneDNN or bf16 experiment) is checked against the reference
/// pass, never against its own sequential run.
bool Executor::is_reference_run(const RunParams& p) const {
  return p.strategy->first_device_only && p.devices.size() == 1 && !p.devices[0].is_cuda() && p.batch == 1 &&
         p.threads == 0 && e_.model.engine == EngineKind::torchscript && e_.model.precision == Precision::fp32 &&
         !e_.model.channels_last && !e_.model.cuda_graphs;
}

// Only the inputs that `got` has and the reference lacks are run (a rank of a multi-process run
// checks its own share).
const MemorySink& Executor::reference(ResizeMode m, const MemorySink& got) {
  auto& r = refs_[m];
  const auto& src = source_for(m);
  if (!r) r = std::make_unique<MemorySink>(src.size());
  std::vector<std::size_t> missing;
  for (std::size_t k = 0; k < src.size(); ++k)
    if (got.times_seen(k) > 0 && r->times_seen(k) == 0) missing.push_back(k);
  if (!missing.empty()) {
    RunSettings s;
    s.warmup_batches = 1;
    s.stop = env_.stop;
    log_ << "vecbench: reference pass (sequential, cpu, batch 1, torchscript fp32) over " << missing.size()
         << " inputs\n";
    const auto factory = env_.make_reference_factory ? env_.make_reference_factory() : env_.make_factory();
    DeviceOptions ro;
    ro.cpu_cores = env_.cpu_cores;
    run_strategy(kSequentialStrategy, src, missing, expand_devices("cpu", ro), factory, *r, s, env_.input_size);
  }
  return *r;
}

void Executor::run_external(PlannedRun& p, int rep) {
  LoadProbe probe;  // the peer is a child process: its CPU time counts as this process's own
  probe.start();
  const ExternalOutcome o = vecbench::run_external(e_.external[*p.external]);
  const auto load = probe.stop();
  if (!o.ok) {
    p.result.status = RunStatus::skipped;
    p.result.reason = o.reason;
    log_ << "skipped: " << o.reason << "\n";
    return;
  }
  // wall_s is the whole command (start-up included); images_per_s is what the peer reports.
  Sample s;
  s.rep = rep;
  s.images = static_cast<std::int64_t>(o.images);
  s.wall_s = o.wall_s;
  s.images_per_s = o.images_per_s;
  record_load(s, load);
  p.result.samples.push_back(s);
  p.result.effective.output = o.line;  // the peer's own account of what it ran (last repetition's)
  log_ << o.images_per_s << " img/s\n";
}

std::string Executor::trace_process_name(const PlannedRun& p, int rank) const {
  return "vecbench " + p.result.id + (dist_ ? " rank " + std::to_string(rank) : "");
}

TraceFigures Executor::record_trace(const Trace& t, std::size_t index, int rep, int rank) const {
  TraceFigures f = trace_figures(t);
  if (rep != 0) return f;
  const std::string name = "run" + std::to_string(index) + (rank > 0 ? "-rank" + std::to_string(rank) : "") + ".json";
  try {
    save_trace(env_.trace_dir / name, t);
    f.file = (env_.trace_dir.filename() / name).string();
  } catch (const std::exception& e) {
    log_ << "(trace not written: " << e.what() << ") ";
  }
  return f;
}

LocalOutcome Executor::run_local(PlannedRun& p, std::size_t index, int rep) {
  LocalOutcome out;
  const RunParams& params = *p.matrix;
  const ResizeMode rm = params.resize;
  const ImageSource& src = source_for(rm);
  const auto& devs = params.devices;
  RunSettings s;
  s.batch_size = params.batch;
  s.warmup_batches = e_.warmup_batches;
  s.decode_threads = e_.decode_threads;
  s.prefetch_batches = e_.prefetch_batches;
  s.stop = env_.stop;
  if (env_.host_memory) s.host_memory = env_.host_memory(devs);  // CUDA: pinned batch buffers
  auto mem_p = std::make_unique<MemorySink>(src.size());
  MemorySink& mem = *mem_p;
  std::vector<ResultSink*> sinks{&mem};
  std::unique_ptr<OutputWriter> writer;
  const fs::path dir = env_.work_dir / ("run" + std::to_string(index) + "-rep" + std::to_string(rep));
  if (e_.output_format != OutputFormat::none) {
    WriterOptions w;
    w.format = e_.output_format;
    w.out_dir = dir;
    w.resume = false;
    w.quiet = rep > 0;
    writer = std::make_unique<OutputWriter>(src, w);
    sinks.push_back(writer.get());
  }
  TeeSink tee(sinks);
  const StrategyEntry& strategy = *params.strategy;
  std::vector<std::size_t> todo = all_indices(src.size());
  if (dist_ && !talk()) todo = strided_share(todo, dist_->rank(), dist_->size());
  const int rank = dist_ ? dist_->rank() : 0;
  std::unique_ptr<Trace> trace;
  if (!env_.trace_dir.empty()) s.trace = (trace = std::make_unique<Trace>(rank, trace_process_name(p, rank))).get();
  LoadProbe probe;
  probe.start();
  const ModelFactory factory = injected_slowdown(strategy.name, env_.make_factory());
  if (e_.keep_replicas) {
    auto& pool = pools_[index];
    if (!pool) pool = std::make_unique<ReplicaPool>(strategy_devices(strategy, devs), factory);
    out.stats = dist_ ? dist_->run(strategy, src, todo, *pool, tee, s, env_.input_size, &out.chunks)
                      : run_strategy(strategy, src, todo, *pool, tee, s, env_.input_size);
  } else {
    out.stats = dist_ ? dist_->run(strategy, src, todo, devs, factory, tee, s, env_.input_size, &out.chunks)
                      : run_strategy(strategy, src, todo, devs, factory, tee, s, env_.input_size);
  }
  out.load = probe.stop();
  if (trace) out.trace = record_trace(*trace, index, rep, rank);
  if (writer) writer->finish();
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (rep == 0) {
    EffectiveSettings& eff = p.result.effective;
    eff = EffectiveSettings{};
    for (const auto& d : strategy_devices(strategy, devs)) eff.devices.push_back({d.name(), d.threads});
    eff.decode_threads = e_.decode_threads;
    eff.prefetch_batches = e_.prefetch_batches;
    eff.warmup_batches = e_.warmup_batches;
    eff.batch = s.batch_size;
    if (s.host_memory) eff.batch_memory = s.host_memory->name();
    if (e_.verify && is_reference_run(params) && !refs_[rm]) refs_[rm] = std::move(mem_p);
    if (e_.verify) {
      out.verification = verify_features(mem, reference(rm, mem));
      out.verification->reference_engine = to_string(EngineKind::torchscript);
      out.verification->reference_precision = to_string(Precision::fp32);
      out.verification->reference_batch = 1;
    }
  }
  return out;
}

void Executor::run_matrix(PlannedRun& p, std::size_t index, int rep) {
  LocalOutcome local;
  try {
    local = run_local(p, index, rep);
  } catch (const std::exception& ex) {
    if (!dist_) throw;
    local.error = ex.what();  // reported by rank 0 after the samples are gathered
  }
  const int batch = p.matrix->batch;
  Sample sample;
  std::optional<Verification> verification = local.verification;
  if (!dist_) {
    sample = sample_from_stats(local.stats, rep);
  } else {
    Comm& comm = dist_->comm();
    RankReport mine;
    mine.stats = &local.stats;
    mine.rep = rep;
    mine.chunks = local.chunks;
    mine.error = local.error;
    if (local.verification) mine.verification = *local.verification;
    const RankIdentity who{comm.rank(), comm.size(), dist_->host(), dist_->mode(), dist_->label()};
    const auto g = gather_ranks(comm, who, mine);
    if (!g) return;  // not rank 0: rank 0 records the combined sample
    if (!g->errors.empty()) throw Error(g->errors);
    sample = sample_from_json(g->sample, "rank samples");
    verification.reset();
    if (g->verification.is_object()) verification = verification_from_json(g->verification, "rank verifications");
  }
  if (local.trace) sample.trace = local.trace;  // several processes: rank 0's own trace
  record_load(sample, local.load);              // several processes: rank 0's machine
  p.result.samples.push_back(sample);
  if (rep == 0 && e_.verify && verification) p.result.verification = verification;
  log_ << sample.images_per_s << " img/s"
       << (dist_ ? " (" + std::to_string(dist_->size()) + " " + (talk() ? "ranks" : "shards, this one") + ")" : "")
       << "\n";
  if (e_.seed_timing_lines)
    std::printf("seed-style: %lld images vectorized in %.2f s (%.2f img/s) [%s on %s, batch %d]\n",
                static_cast<long long>(sample.images), sample.wall_s, sample.images_per_s, p.matrix->strategy->name,
                p.matrix->devices_spec.text().c_str(), batch);
}

/// Whether a run's median is known to +-target: its confidence interval (stats::median_ci) is at
/// least a 90 % one (5 samples or more: with fewer, the whole range covers the median with 75 %
/// or 87.5 % only) and half its width is within `target` of the median.
bool median_known(const RunResult& r, double target) {
  std::vector<double> ips;
  for (const Sample& smp : r.samples) ips.push_back(smp.images_per_s);
  const stats::MedianCi ci = stats::median_ci(ips);
  return ci.level >= 0.9 && ci.rel_half <= target;
}

/// The runs that get one more repetition in this adaptive round: ok, short of the maximum, and
/// with their median's confidence interval wider than the target (stats::median_ci). Rank 0
/// decides for every rank (the others do not hold the samples).
std::vector<std::size_t> adaptive_round(const Experiment& e, const std::vector<PlannedRun>& runs, Comm* comm) {
  std::vector<std::size_t> need;
  if (!comm || comm->rank() == 0)
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const RunResult& r = runs[i].result;
      if (r.status != RunStatus::ok || r.samples.empty() ||
          r.samples.size() >= static_cast<std::size_t>(max_repetitions(e)))
        continue;
      if (!median_known(r, e.target_median_ci_pct / 100.0)) need.push_back(i);
    }
  if (!comm) return need;
  std::string msg;
  for (std::size_t i : need) msg += std::to_string(i) + ",";
  msg = comm->broadcast(msg);
  need.clear();
  std::istringstream in(msg);
  for (std::string tok; std::getline(in, tok, ',');)
    if (!tok.empty()) need.push_back(std::stoul(tok));
  return need;
}

/// The stopping record of each ok run with adaptive repetitions; `halted` is the scheduler's
/// action that ended the adaptive rounds early (go: they ended by themselves).
void record_stopping(const Experiment& e, std::vector<PlannedRun>& runs, StepAction halted) {
  if (max_repetitions(e) <= e.repetitions) return;
  for (PlannedRun& p : runs) {
    RunResult& r = p.result;
    if (r.status != RunStatus::ok || r.samples.empty()) continue;
    const double target = e.target_median_ci_pct / 100.0;
    Stopping s{"target", e.repetitions, max_repetitions(e), target};
    if (!median_known(r, target))
      s.rule = r.samples.size() >= static_cast<std::size_t>(max_repetitions(e)) ? "max_repetitions"
               : halted == StepAction::interrupted                              ? "interrupted"
                                                                                : "time_budget";
    r.stopping = s;
  }
}

}  // namespace

ResultFile run_experiment(const Experiment& e, const ExperimentEnv& env) {
  std::ostream& log = *env.log;
  const auto t_begin = Clock::now();
  Executor ex(e, env);
  PlanInputs in;
  in.resolve_resize = [&](std::optional<ResizeMode> r) { return ex.resolve_resize(r); };
  in.input_kind = [&](ResizeMode m) { return ex.source_for(m).kind(); };
  in.expand = [&](const DevicesSpec& spec, int threads) { return ex.expand(spec, threads); };
  std::vector<PlannedRun> runs = plan_runs(e, in);
  const auto order = run_order(runs.size(), e.repetitions, e.interleave);
  const Scheduler sched(e.time_budget_s, env.stop, env.elapsed_s ? env.elapsed_s : std::function<double()>([t_begin] {
                          return seconds_since(t_begin);
                        }));
  // Several processes: rank 0 decides what every rank does next (they must agree).
  Comm* comm = ex.dist() ? &ex.dist()->comm() : nullptr;
  if (!ex.talk()) comm = nullptr;
  std::size_t step = 0;
  const bool adaptive = max_repetitions(e) > e.repetitions;
  const std::string of = "/" + std::to_string(e.repetitions) + (adaptive ? "+" : "");
  // One step: returns the scheduler's action (go: it ran). `optional`: an adaptive repetition,
  // which the budget or a stop ends without marking the run skipped.
  auto run_step = [&](std::size_t run, int rep, bool optional) {
    ++step;
    PlannedRun& p = runs[run];
    StepAction action = sched.decide(p.result);
    if (comm) action = parse_step_action(comm->broadcast(to_string(action)));
    if (action != StepAction::go) {
      if (!optional) sched.record(action, p.result, rep);
      return action;
    }
    if (p.external && comm && comm->rank() != 0) return action;  // external commands run on rank 0 only
    log << "[" << step << (optional ? "" : "/" + std::to_string(order.size())) << "] " << p.result.id << " rep "
        << rep + 1 << of << " ... " << std::flush;
    try {
      if (p.external)
        ex.run_external(p, rep);
      else
        ex.run_matrix(p, run, rep);
    } catch (const std::exception& err) {
      p.result.status = RunStatus::error;
      p.result.reason = err.what();
      log << "error: " << err.what() << "\n";
    }
    if (env.on_progress && (!comm || comm->rank() == 0)) {  // the result as it stands, for the caller to save
      std::vector<PlannedRun> now = runs;
      for (PlannedRun& q : now)
        if (q.result.status == RunStatus::ok && q.result.samples.empty()) {
          q.result.status = RunStatus::skipped;
          q.result.reason = kNotYetRun;
        }
      env.on_progress(assemble(e, env, ex.dist(), now));
    }
    return action;
  };
  for (const Step& st : order) run_step(st.run, st.rep, false);
  StepAction halted = StepAction::go;
  for (int rep = e.repetitions; adaptive && rep < max_repetitions(e) && halted == StepAction::go; ++rep) {
    const auto need = adaptive_round(e, runs, comm);
    if (need.empty()) break;
    log << "vecbench: adaptive repetition " << rep + 1 << ": " << need.size() << " runs' median not yet within +-"
        << e.target_median_ci_pct << " %\n";
    for (std::size_t i : need) {
      const StepAction a = run_step(i, rep, true);
      if (a == StepAction::budget || a == StepAction::interrupted) halted = a;
      if (halted != StepAction::go) break;
    }
  }
  record_stopping(e, runs, halted);
  std::error_code ec;
  fs::remove_all(env.work_dir, ec);
  return assemble(e, env, ex.dist(), runs);
}

fs::path result_path(const fs::path& results_dir, const std::string& name) {
  return results_dir / name / (utc_stamp() + ".json");
}

}  // namespace vecbench
