// Markdown report of result files: metadata, scaling tables (speedup and parallel efficiency
// over the best sequential run), per-image stage times, and two plots made by
// tools/plot_results.py (skipped, with the reason in the report, when python/matplotlib fail).
#pragma once
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "vecbench/core/base/weight_source.hpp"
#include "vecbench/core/files/fs_util.hpp"
#include "vecbench/core/run/metrics.hpp"
#include "vecbench/core/system/subprocess.hpp"
#include "vecbench/results/baseline.hpp"
#include "vecbench/results/markdown_table.hpp"
#include "vecbench/results/report_trace.hpp"
#include "vecbench/results/result.hpp"

namespace vecbench {

namespace detail {
/// The run's id without its strategy= and devices= words (ids keep the runner's param order).
inline std::string config_text(const std::string& id) {
  std::string out, word;
  std::istringstream in(id);
  while (in >> word)
    if (word.rfind("strategy=", 0) != 0 && word.rfind("devices=", 0) != 0) out += (out.empty() ? "" : " ") + word;
  return out;
}
inline std::string json_text(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "n/a";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

/// The environment record and the machine's load over the runs, or "" for files without one.
inline std::string environment_markdown(const ResultFile& f) {
  if (!f.meta.environment) return "";
  const Environment& e = *f.meta.environment;
  auto list = [](const auto& v, const char* sep, const char* fmt) {
    std::string s;
    for (const auto& x : v) {
      if constexpr (std::is_arithmetic_v<std::decay_t<decltype(x)>>)
        s += (s.empty() ? "" : sep) + format_number(fmt, x);
      else
        s += (s.empty() ? "" : sep) + x;
    }
    return s.empty() ? std::string("unknown") : s;
  };
  double foreign = -1, steal = -1;
  std::size_t runs = 0, noisy = 0;
  for (const RunResult& r : f.runs) {
    runs += r.validity.has_value();
    noisy += is_noisy(r);
    for (const Sample& s : r.samples) {
      if (s.foreign_cpu_share) foreign = std::max(foreign, *s.foreign_cpu_share);
      if (s.steal_share) steal = std::max(steal, *s.steal_share);
    }
  }
  std::string load = "- machine: other processes took at most " +
                     (foreign < 0 ? std::string("n/a") : format_number("%.1f", 100 * foreign) + " %") +
                     " of the CPU in any repetition, steal at most " +
                     (steal < 0 ? std::string("n/a") : format_number("%.1f", 100 * steal) + " %") + "; load average " +
                     list(e.load_avg_before, " / ", "%.2f") + " before, " + list(e.load_avg_after, " / ", "%.2f") +
                     " after (1/5/15 min, this run's own threads included); validity: " + std::to_string(noisy) +
                     " of " + std::to_string(runs) + " runs noisy\n";
  std::string chose;
  for (const auto& [engine, isa] : e.engine_isa) chose += (chose.empty() ? "; kernels: " : ", ") + engine + " " + isa;
  return "- build: " + e.build_type + " (" + e.compiler_flags + "), binary " + e.binary_git_sha +
         (e.binary_git_dirty ? " (dirty tree)" : "") + "; CPU ISA: " + list(e.cpu_isa, ", ", "%g") + chose + "\n" +
         load;
}

inline std::string meta_markdown(const ResultFile& f) {
  const Meta& m = f.meta;
  std::string gpus;
  for (const GpuInfo& g : m.gpus)
    gpus += (gpus.empty() ? "" : ", ") + g.name + " (" + format_number("%.1f", g.memory_bytes / 1073741824.0) + " GiB)";
  std::string versions = "vecbench " + m.vecbench_version + " (git " + m.git_sha + (m.git_dirty ? ", dirty" : "") + ")";
  for (const auto& it : m.versions.items()) versions += ", " + it.key() + " " + json_text(m.versions, it.key().c_str());
  std::string argv;
  for (const auto& a : m.argv) argv += (argv.empty() ? "" : " ") + a;
  std::string sha = json_text(m.model, "weight_sha256");
  if (sha.size() > 12) sha = sha.substr(0, 12) + "...";
  const std::string note = WeightSource::parse(json_text(m.model, "weight_source")).note();
  return "- date: " + m.date_utc + "; host: `" + m.host + "`; CPU: " + m.cpu_model + " (" +
         std::to_string(m.cpu_cores) + " cores); GPUs: " + (gpus.empty() ? "none" : gpus) + "\n" +
         "- versions: " + versions + "\n" + "- model: arch " + json_text(m.model, "arch") + ", weights " +
         json_text(m.model, "weight_source") + " (sha256 " + sha + "), path `" + json_text(m.model, "path") + "`" +
         (note.empty() ? "" : "\n- **" + note + "**") + "\n" + environment_markdown(f) +
         (argv.empty() ? "" : "- command: `" + argv + "`\n");
}

inline std::string verification_text(const RunResult& r) {
  if (!r.verification) return "n/a";
  const Verification& v = *r.verification;
  return "vs " + v.reference + ": " + std::to_string(v.compared_images) + " images, max abs " +
         format_number("%.3g", v.max_abs_diff) + ", max rel " + format_number("%.3g", v.max_rel_diff);
}

/// The external commands beside the experiment's own runs, fastest first, each as a ratio of the
/// fastest of vecbench's own (matrix) runs in the same file: what a user would run instead.
inline std::string externals_markdown(const ResultFile& f) {
  std::vector<const RunResult*> ext;
  const RunResult* best = nullptr;
  for (const RunResult& r : f.runs) {
    if (r.params.is_external()) {
      ext.push_back(&r);
    } else if (r.status == RunStatus::ok &&
               (!best || r.summary.images_per_s.median > best->summary.images_per_s.median)) {
      best = &r;
    }
  }
  if (ext.empty()) return "";
  std::stable_sort(ext.begin(), ext.end(), [](const RunResult* a, const RunResult* b) {
    const double x = a->status == RunStatus::ok ? a->summary.images_per_s.median : -1.0;
    const double y = b->status == RunStatus::ok ? b->summary.images_per_s.median : -1.0;
    return x > y;
  });
  MarkdownTable table(
      {{"command"}, {"img/s median (min-max)", Align::right}, {"vs best matrix run", Align::right}, {"status"}});
  for (const RunResult* r : ext) {
    const stats::Summary& t = r->summary.images_per_s;
    const bool ok = r->status == RunStatus::ok;
    table.row({"`" + md_cell(r->params.external) + "`",
               ok ? format_number("%.2f", t.median) + " (" + format_number("%.2f", t.min) + "-" +
                        format_number("%.2f", t.max) + ")"
                  : "n/a",
               ok && best ? format_number("%.2fx", t.median / best->summary.images_per_s.median) : "n/a",
               md_cell(status_text(*r))});
  }
  std::string md = "### Beside other tools (external commands, run interleaved with the runs above)\n\n" + table.str();
  if (best)
    md += "\nBest matrix run: `" + best->id + "` (" + format_number("%.2f", best->summary.images_per_s.median) +
          " img/s).\n";
  return md + "\n";
}

inline std::string scaling_markdown(const ResultFile& f) {
  const int gpus = static_cast<int>(f.meta.gpus.size());  // what "cuda" was on the machine that ran them
  std::vector<std::string> strategies = {kSequentialStrategy};
  for (const RunResult& r : f.runs)
    if (!r.params.is_external() &&
        std::find(strategies.begin(), strategies.end(), r.params.strategy) == strategies.end())
      strategies.push_back(r.params.strategy);
  std::vector<const RunResult*> refs;  // sequential references, labelled S1, S2, ...
  std::string md;
  for (const std::string& strategy : strategies) {
    std::vector<const RunResult*> runs;
    for (const RunResult& r : f.runs)
      if (!r.params.is_external() && r.params.strategy == strategy) runs.push_back(&r);
    if (runs.empty()) continue;
    std::stable_sort(runs.begin(), runs.end(), [gpus](const RunResult* a, const RunResult* b) {
      return device_count(a->params, gpus) < device_count(b->params, gpus);
    });
    MarkdownTable table({{"devices", Align::right},
                         {"config"},
                         {"img/s median (min-max)", Align::right},
                         {"speedup", Align::right},
                         {"vs"},
                         {"efficiency", Align::right},
                         {"verification"},
                         {"status"}});
    for (const RunResult* r : runs) {
      const int n = device_count(r->params, gpus);
      const stats::Summary& t = r->summary.images_per_s;
      std::string speedup = "n/a", vs = "none", eff = "n/a";
      if (const RunResult* s = r->status == RunStatus::ok ? best_sequential_run(f, *r) : nullptr) {
        auto it = std::find(refs.begin(), refs.end(), s);
        if (it == refs.end()) it = refs.insert(refs.end(), s);
        vs = "S" + std::to_string(it - refs.begin() + 1);
        const double x = t.median / s->summary.images_per_s.median;
        speedup = format_number("%.2fx", x);
        if (n > 0) eff = format_number("%.2f", x / n);
      }
      table.row({(n > 0 ? std::to_string(n) : "?") + " (" + md_cell(r->params.text_of("devices")) + ")",
                 md_cell(config_text(r->id)),
                 r->status == RunStatus::ok ? format_number("%.2f", t.median) + " (" + format_number("%.2f", t.min) +
                                                  "-" + format_number("%.2f", t.max) + ")"
                                            : "n/a",
                 speedup, vs, eff, md_cell(verification_text(*r)), md_cell(status_text(*r))});
    }
    md +=
        "### Scaling: `" + (strategy.empty() ? std::string("(no strategy)") : strategy) + "`\n\n" + table.str() + "\n";
  }
  if (!refs.empty()) {
    md +=
        "Speedup = median img/s / median img/s of the best sequential run with the same batch, "
        "resize "
        "and input; efficiency = speedup / devices. Sequential references:\n\n";
    for (std::size_t i = 0; i < refs.size(); ++i)
      md += "- S" + std::to_string(i + 1) + ": `" + refs[i]->id + "` (" +
            format_number("%.2f", refs[i]->summary.images_per_s.median) + " img/s)\n";
    md += "\n";
  }
  return md;
}

inline std::string stages_markdown(const ResultFile& f) {
  std::vector<std::string> stages(kStageNames.begin(), kStageNames.end());
  for (const RunResult& r : f.runs)
    for (const auto& [k, v] : r.summary.stage_s_per_image)
      if (std::find(stages.begin(), stages.end(), k) == stages.end()) stages.push_back(k);
  MarkdownTable table({{"run"}});
  for (const auto& s : stages) table.add_column(s, Align::right);
  table.add_column("total", Align::right);
  for (const RunResult& r : f.runs) {
    if (r.summary.stage_s_per_image.empty()) continue;
    double total = 0.0;
    std::vector<std::string> row = {"`" + md_cell(r.id) + "`"};
    for (const auto& s : stages) {
      const auto it = r.summary.stage_s_per_image.find(s);
      row.push_back(it == r.summary.stage_s_per_image.end() ? std::string("n/a")
                                                            : format_number("%.2f", 1e3 * it->second));
      if (it != r.summary.stage_s_per_image.end()) total += 1e3 * it->second;
    }
    row.push_back(format_number("%.2f", total));
    table.row(std::move(row));
  }
  if (table.empty()) return "### Stage time per image\n\nNo run recorded stage times.\n\n";
  return "### Stage time per image (ms; median over reps of stage seconds / images, summed over threads)\n\n" +
         table.str() + "\n";
}
}  // namespace detail

/// Runs `python plot_script FILES... --out out_dir` (output in out_dir/plot.log). Returns "" when
/// both PNGs were written, else why not.
inline std::string run_plot_script(const std::string& python, const std::string& plot_script,
                                   const std::vector<std::filesystem::path>& files,
                                   const std::filesystem::path& out_dir) {
  namespace fs = std::filesystem;
  const fs::path pngs[] = {out_dir / "throughput_vs_devices.png", out_dir / "stage_times.png"};
  std::error_code ec;
  for (const auto& p : pngs) fs::remove(p, ec);
  fs::remove_all(out_dir / "timelines", ec);  // pictures of an earlier report's runs
  for (auto it = fs::directory_iterator(out_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().filename().string().rfind("timeline_compare_", 0) == 0) fs::remove(it->path(), ec);
  if (python.empty()) return "no python interpreter configured";
  if (!fs::is_regular_file(plot_script, ec)) return "plot script not found: " + plot_script;
  std::vector<std::string> argv = {python, plot_script};
  for (const auto& f : files) argv.push_back(f.string());
  argv.insert(argv.end(), {"--out", out_dir.string()});
  const int rc = run_program(argv, (out_dir / "plot.log").string());
  if (rc == -1) return "cannot start " + python + " (not found, not executable, or killed)";
  if (rc != 0) {
    std::ifstream log(out_dir / "plot.log");
    std::string line, last;
    while (std::getline(log, line))
      if (!line.empty()) last = line;
    return python + " " + plot_script + " failed (exit " + std::to_string(rc) +
           "): " + (last.empty() ? "no output" : last);
  }
  for (const auto& p : pngs)
    if (!fs::is_regular_file(p, ec)) return "plot script did not write " + p.filename().string();
  return "";
}

/// The text of report.md; `plots_note` is "" when the PNGs exist in the same directory, else the
/// reason they were skipped. The timeline pictures found in `out_dir` are shown too.
inline std::string report_markdown(const std::vector<ResultFile>& results, const std::string& plots_note,
                                   const std::filesystem::path& out_dir = {}) {
  std::string md = "# vecbench report\n\n";
  for (const ResultFile& f : results)
    md += "- `" + f.name + "`: " + std::to_string(f.runs.size()) + " runs on `" + f.meta.host + "`, " +
          f.meta.date_utc + "\n";
  md += "\n## Plots\n\n";
  md += plots_note.empty() ? detail::compare_pictures_markdown(results, out_dir) +
                                 "![Throughput vs devices](throughput_vs_devices.png)\n\n![Stage time "
                                 "per image](stage_times.png)\n\n"
                           : "Plots skipped: " + plots_note + "\n\n";
  for (std::size_t fi = 0; fi < results.size(); ++fi) {
    const ResultFile& f = results[fi];
    md += "## `" + f.name + "` on `" + f.meta.host + "`\n\n" + detail::meta_markdown(f) + "\n" +
          detail::trace_markdown(f, fi, plots_note.empty() ? out_dir : std::filesystem::path()) +
          detail::scaling_markdown(f) + detail::externals_markdown(f) + detail::stages_markdown(f);
  }
  return md;
}

/// Writes out_dir/report.md for `results`, with the plot data (out_dir/plot_data/*.json) and the
/// plots throughput_vs_devices.png, stage_times.png and the traced runs' timelines made by
/// `python plot_script`. `sources[i]` is the file results[i] was read from: its samples' trace
/// files are relative to that file's folder (none given: to the working directory). A missing
/// python or matplotlib skips the plots (the report says why); it is not an error.
inline void write_report(const std::vector<ResultFile>& results, const std::filesystem::path& out_dir,
                         const std::string& python, const std::string& plot_script,
                         const std::vector<std::filesystem::path>& sources = {}) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw IoError(out_dir.string(), "cannot create the report directory: " + ec.message());
  std::vector<ResultFile> rs = results;
  std::vector<std::filesystem::path> files;
  for (std::size_t i = 0; i < rs.size(); ++i) {
    for (RunResult& r : rs[i].runs)  // trust the file's summary unless it is out of date
      if (r.summary.images_per_s.count != r.samples.size()) summarize_run(r);
    std::string safe = rs[i].name;
    for (char& c : safe)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
    files.push_back(out_dir / "plot_data" / (std::to_string(i) + "_" + safe + ".json"));
    const std::filesystem::path from = i < sources.size() ? sources[i].parent_path() : std::filesystem::path(".");
    save_result(files.back(), detail::with_trace_paths_from(rs[i], from, files.back().parent_path()));
  }
  const std::string note = rs.empty() ? "no result files" : run_plot_script(python, plot_script, files, out_dir);
  for (std::size_t i = 0; i < rs.size(); ++i)  // the report names trace files relative to itself
    rs[i] = detail::with_trace_paths_from(rs[i], i < sources.size() ? sources[i].parent_path() : ".", out_dir);
  atomic_write(out_dir / "report.md", report_markdown(rs, note, out_dir));
}

}  // namespace vecbench
