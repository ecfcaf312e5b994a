// The command line (CLI11 subcommands): parses the arguments into each command's settings (each
// group of commands' options in its own file: src/app/cli_parts.hpp) and calls the command
// (src/app/, declared in include/vecbench/app/commands.hpp); before that, sets how the process's
// malloc keeps freed buffers (keep_freed_buffers).
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

#include "vecbench/app/build_info.hpp"
#include "vecbench/app/commands.hpp"
#include "vecbench/app/merge.hpp"
#include "vecbench/core/system/cpu_features.hpp"
#include "vecbench/core/system/host.hpp"
#include "vecbench/results/compare.hpp"

#include "cli_parts.hpp"
#include "vecbench_version.hpp"

using namespace vecbench;
using namespace vecbench::cli;

extern "C" char* openblas_get_corename(void) __attribute__((weak));  // OpenBLAS, when linked
namespace {

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
