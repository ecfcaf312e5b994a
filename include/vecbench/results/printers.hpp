// Printers of the result model: small classes that write a ResultFile one way each (as
// google/benchmark's reporters do). The compare table (results/compare.hpp) and the report
// (results/report.hpp) print comparisons and sets of files.
#pragma once
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>

#include "vecbench/results/baseline.hpp"
#include "vecbench/results/markdown_table.hpp"
#include "vecbench/results/result.hpp"

namespace vecbench {

/// Writes one result file somewhere.
class ResultPrinter {
 public:
  virtual ~ResultPrinter() = default;
  virtual void print(const ResultFile& result, std::ostream& out) const = 0;
};

/// The end-of-run table (markdown): one row per run, with its median's confidence interval and
/// repetitions, its speed against the best sequential run of the same batch, resize and input
/// (external peers: none), and its verification.
class RunTablePrinter : public ResultPrinter {
 public:
  void print(const ResultFile& result, std::ostream& out) const override {
    MarkdownTable table({{"strategy"},
                         {"devices"},
                         {"batch"},
                         {"threads"},
                         {"resize"},
                         {"img/s (median)"},
                         {"median CI"},
                         {"reps"},
                         {"spread"},
                         {"vs sequential"},
                         {"max rel diff"},
                         {"status"}});
    auto printed = [](const char* f, double v) {  // as printf writes it (nan included)
      char b[64];
      std::snprintf(b, sizeof b, f, v);
      return std::string(b);
    };
    for (const RunResult& r : result.runs) {
      const auto& p = r.params;
      const auto& m = r.summary.images_per_s;
      const RunResult* seq = p.is_external() ? nullptr : best_sequential_run(result, r);
      const double vs = seq ? m.median / seq->summary.images_per_s.median : NAN;
      const double rel = r.verification ? r.verification->max_rel_diff : NAN;
      char vs_s[32] = "-", rel_s[32] = "-";  // no sequential run to compare with / not verified
      if (std::isfinite(vs)) std::snprintf(vs_s, sizeof vs_s, "%.2fx", vs);
      if (std::isfinite(rel)) std::snprintf(rel_s, sizeof rel_s, "%.1e", rel);
      auto cell = [&](const char* k) {
        const std::string v = p.text_of(k);
        return v.empty() ? std::string("-") : v;
      };
      // The median's confidence interval: +-half its width, and its level (stats::median_ci).
      char ci_s[48] = "-";
      if (const auto& ci = r.summary.images_per_s_median_ci)
        std::snprintf(ci_s, sizeof ci_s, "+-%.1f%% (%.0f%%)", 100 * ci->rel_half, 100 * ci->level);
      table.row({p.strategy_label(), cell("devices"), cell("batch"), cell("threads"), cell("resize"),
                 printed("%.2f", m.median), ci_s, std::to_string(r.samples.size()),
                 printed("%.1f%%", m.rel_spread * 100), vs_s, rel_s, status_text(r)});
    }
    out << table.str();
  }
};

/// RunTablePrinter's table as a string.
inline std::string result_table(const ResultFile& result) {
  std::ostringstream s;
  RunTablePrinter().print(result, s);
  return s.str();
}

}  // namespace vecbench
