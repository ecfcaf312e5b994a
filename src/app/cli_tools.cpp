// The tool commands' options (src/app/cli_parts.hpp): predecode, devices, model info, calibrate,
// run, tune, trace.
#include "cli_parts.hpp"

#include <string>

#include "vecbench/engine/engine_kind.hpp"
#include "vecbench/input/resize.hpp"
#include "vecbench/strategies/strategies.hpp"

namespace vecbench {
namespace cli {

/// predecode, devices, model info, run, tune.
void add_tool_commands(CLI::App& app, Cli& c) {
  c.pre = app.add_subcommand("predecode",
                             "Decode and resize images once into a uint8 [N,S,S,3] .npy (model-side experiments)");
  c.pre->add_option("--images", c.pd_images, "Image directory or list file")->required();
  c.pre->add_option("--out", c.pd_out, "Output .npy")->required();
  c.pre->add_option("--resize", c.pd_resize, enum_list<ResizeMode>())
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

}  // namespace cli
}  // namespace vecbench
