// The command line's parts (src/app/cli*.cpp): every subcommand's settings (Cli) and the
// functions that add each group of subcommands to the CLI11 app, each group in its own file beside
// the others: vectorize (cli_vectorize.cpp), the tool commands predecode/devices/model/run/tune
// (cli_tools.cpp), the store and metrics commands verify/stats/fid/models/metrics (cli_store.cpp),
// the result commands compare/merge/report/trace (cli_results.cpp); cli.cpp parses and dispatches.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "vecbench/app/commands.hpp"
#include "vecbench/results/compare.hpp"

namespace vecbench {
namespace cli {

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

/// --distribution, --chunk, --rank-timeout, --shard-index, --num-shards (vectorize, run).
void add_dist_options(CLI::App* c, DistArgs& d);
/// vectorize (its footer: `exit_status`).
void add_vectorize(CLI::App& app, Cli& c, const std::string& exit_status);
/// predecode, devices, model info, calibrate, run, tune, trace.
void add_tool_commands(CLI::App& app, Cli& c);
/// verify, stats, fid, models.
void add_store_commands(CLI::App& app, Cli& c);
/// metrics.
void add_metrics_command(CLI::App& app, Cli& c);
/// compare, merge, report (compare's footer: `exit_status`).
void add_result_commands(CLI::App& app, Cli& c, const std::string& exit_status);

}  // namespace cli
}  // namespace vecbench
