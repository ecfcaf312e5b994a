// The result commands' options (src/app/cli_parts.hpp): compare, merge, report.
#include "cli_parts.hpp"

#include <string>

namespace vecbench {
namespace cli {

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

}  // namespace cli
}  // namespace vecbench
