// The report's trace part: per run, the figures derived from its trace (forward overlap, each
// device's busy / starved / blocked shares) as a table, and the timeline pictures that
// tools/plot_results.py drew from the trace files (timelines/<F>_<R>.png, timeline_compare_<F>.png).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "vecbench/results/markdown_table.hpp"
#include "vecbench/results/result.hpp"

namespace vecbench {
namespace detail {

/// `s` as a markdown table cell ('|' escaped).
inline std::string md_cell(std::string s) {
  for (std::size_t i = 0; (i = s.find('|', i)) != std::string::npos; i += 2) s.insert(i, "\\");
  return s;
}

/// The first sample of `r` with trace figures, or null.
inline const Sample* traced_sample(const RunResult& r) {
  for (const Sample& s : r.samples)
    if (s.trace) return &s;
  return nullptr;
}

/// "### Trace figures" of result file `f` (the `fi`-th of the report): one row per traced run;
/// then, where the plot script drew them in `out_dir`, every run's timeline picture. "" when no
/// run of `f` was traced.
inline std::string trace_markdown(const ResultFile& f, std::size_t fi, const std::filesystem::path& out_dir) {
  MarkdownTable table({{"run"}, {"forward overlap", Align::right}, {"busy / starved / blocked %"}, {"trace"}});
  std::string pics;
  for (std::size_t ri = 0; ri < f.runs.size(); ++ri) {
    const RunResult& r = f.runs[ri];
    const Sample* s = traced_sample(r);
    if (!s) continue;
    std::string shares;
    for (const DeviceShare& d : s->trace->devices)
      shares += (shares.empty() ? "" : "<br>") + md_cell(d.name) + ": " + format_number("%.0f", 100 * d.busy) + " / " +
                format_number("%.0f", 100 * d.starved) + " / " + format_number("%.0f", 100 * d.blocked);
    table.row({md_cell(r.id), format_number("%.2f", s->trace->forward_overlap), shares,
               s->trace->file.empty() ? std::string("-") : "[trace](" + md_cell(s->trace->file) + ")"});
    const std::string png = "timelines/" + std::to_string(fi) + "_" + std::to_string(ri) + ".png";
    std::error_code ec;
    if (!out_dir.empty() && std::filesystem::is_regular_file(out_dir / png, ec))
      pics += "**" + md_cell(r.id) + "**\n\n![timeline of " + md_cell(r.id) + "](" + png + ")\n\n";
  }
  if (table.empty()) return "";
  std::string md =
      "### Trace figures\n\nForward overlap: device-equivalents computing at once (1 = the devices took turns, N = "
      "all N side by side). Per device, % of the timed window busy (h2d, forward, d2h) / starved (waiting for "
      "input) / blocked (waiting for the writer or a barrier); the rest is idle or host work in the device's own "
      "thread. First traced repetition.\n\n" +
      table.str() + "\n";
  if (!pics.empty())
    md += "<details><summary>Timeline of every run (one lane per thread, coloured by stage)</summary>\n\n" + pics +
          "</details>\n\n";
  return md;
}

/// The side-by-side timeline pictures (naive above data-parallel) the plot script drew in `out_dir`.
inline std::string compare_pictures_markdown(const std::vector<ResultFile>& results,
                                             const std::filesystem::path& out_dir) {
  std::string md;
  for (std::size_t fi = 0; fi < results.size(); ++fi) {
    const std::string png = "timeline_compare_" + std::to_string(fi) + ".png";
    std::error_code ec;
    if (!out_dir.empty() && std::filesystem::is_regular_file(out_dir / png, ec))
      md += "![`" + results[fi].name + "`: naive and data-parallel on one time axis](" + png + ")\n\n";
  }
  return md;
}

/// A copy of `f` whose samples' trace files are named relative to `to_dir` (they were relative
/// to `from_dir`, the folder of the result file `f` was read from), so that a copy written in
/// `to_dir` still finds them.
inline ResultFile with_trace_paths_from(ResultFile f, const std::filesystem::path& from_dir,
                                        const std::filesystem::path& to_dir) {
  namespace fs = std::filesystem;
  for (RunResult& r : f.runs)
    for (Sample& s : r.samples) {
      if (!s.trace || s.trace->file.empty()) continue;
      std::error_code ec;
      const fs::path abs =
          fs::absolute(fs::path(s.trace->file).is_absolute() ? fs::path(s.trace->file) : from_dir / s.trace->file, ec);
      const fs::path rel = fs::relative(abs, fs::absolute(to_dir, ec), ec);
      s.trace->file = (ec || rel.empty() ? abs : rel).generic_string();
    }
  return f;
}

}  // namespace detail
}  // namespace vecbench
