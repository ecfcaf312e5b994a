// The comparison of two result files (results/compare.hpp).
#include "vecbench/results/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace vecbench {

std::vector<SampleMetric> sample_metrics() {
  std::vector<SampleMetric> out;
  for_each_field(field_table(Sample{}), [&](const auto& f) {
    using V = typename std::decay_t<decltype(f)>::Value;
    if constexpr (std::is_arithmetic_v<V>) {
      const auto member = f.member;
      if (f.better != Better::none)
        out.push_back({f.key, f.unit, f.better, [member](const Sample& x) { return static_cast<double>(x.*member); }});
    }
  });
  return out;
}

SampleMetric sample_metric(const std::string& key) {
  std::string names;
  for (const SampleMetric& m : sample_metrics()) {
    if (m.key == key) return m;
    names += (names.empty() ? "" : ", ") + m.key;
  }
  throw ConfigError("metric", "'" + key + "' is not a comparable metric (use one of " + names + ")");
}

std::vector<std::pair<std::string, std::string>> parse_params_filter(const std::string& spec) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t pos = 0;
  while (pos <= spec.size() && !spec.empty()) {
    const std::size_t end = std::min(spec.find(',', pos), spec.size());
    const std::string item = spec.substr(pos, end - pos);
    const std::size_t eq = item.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == item.size())
      throw ConfigError("normalize_by", "'" + item + "' is not key=value (e.g. strategy=sequential)");
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    pos = end + 1;
  }
  return out;
}

bool matches_filter(const ResultParams& params, const std::vector<std::pair<std::string, std::string>>& filter) {
  return !filter.empty() && std::all_of(filter.begin(), filter.end(), [&](const auto& kv) {
    return params.find(kv.first) == std::optional<std::string>(kv.second);
  });
}

const RunResult* find_reference_run(const ResultFile& file, const RunResult& run,
                                    const std::vector<std::pair<std::string, std::string>>& filter,
                                    std::string* problem) {
  const RunResult* best = nullptr;
  std::size_t best_d = 0;
  std::string tied;  // ids of other candidates at best_d
  for (const RunResult& c : file.runs) {
    if (&c == &run || c.id == run.id || !matches_filter(c.params, filter)) continue;
    std::map<std::string, std::pair<std::optional<std::string>, std::optional<std::string>>> values;
    for (auto& [k, v] : run.params.entries()) values[k].first = v;
    for (auto& [k, v] : c.params.entries()) values[k].second = v;
    std::size_t d = 0;
    for (const auto& [k, v] : values)
      if (std::none_of(filter.begin(), filter.end(), [&](const auto& kv) { return kv.first == k; }))
        d += v.first != v.second;
    if (!best || d < best_d)
      best = &c, best_d = d, tied.clear();
    else if (d == best_d)
      tied += ", '" + c.id + "'";
  }
  std::string why;
  if (!best)
    why = "no run matches normalize_by in " + file.name;
  else if (!tied.empty() && best_d > 0)
    why = "ambiguous reference: '" + best->id + "'" + tied + " all differ in " + std::to_string(best_d) + " params";
  else if (best->status != RunStatus::ok)
    why = "reference run '" + best->id + "' is " + to_string(best->status);
  if (why.empty()) return best;
  if (problem) *problem = why;
  return nullptr;
}

std::vector<double> compared_values(const RunResult& run, const RunResult* ref, const SampleMetric& metric) {
  std::vector<double> v;
  for (const Sample& s : run.samples) {
    double x = metric.get(s);
    if (ref) {
      const auto it =
          std::find_if(ref->samples.begin(), ref->samples.end(), [&](const Sample& r) { return r.rep == s.rep; });
      x = (it != ref->samples.end() && metric.get(*it) > 0) ? x / metric.get(*it) : std::nan("");
    }
    if (std::isfinite(x)) v.push_back(x);
  }
  return v;
}

namespace {

using detail::format_number;

RunComparison compare_run(const ResultFile& bf, const RunResult& b, const ResultFile& nf, const RunResult& n,
                          const std::vector<std::pair<std::string, std::string>>& filter, const CompareOptions& o,
                          const SampleMetric& metric) {
  RunComparison c;
  c.id = b.id;
  const RunResult *rb = nullptr, *rn = nullptr;
  if (b.status != RunStatus::ok)
    c.note = std::string("base run ") + to_string(b.status) + ": " + b.reason;
  else if (n.status != RunStatus::ok)
    c.note = std::string("new run ") + to_string(n.status) + ": " + n.reason;
  else if (!filter.empty()) {
    std::string why;
    if (!(rb = find_reference_run(bf, b, filter, &why)))
      c.note = "base: " + why;
    else if (!(rn = find_reference_run(nf, n, filter, &why)))
      c.note = "new: " + why;
    c.base_reference = rb ? rb->id : "";
    c.new_reference = rn ? rn->id : "";
  }
  if (!c.note.empty()) return c;
  // A run judged noisy (experiment/validity.hpp) supports no verdict either way. Normalized by a
  // reference run of the same file, the ratios' own spread is what the U test weighs, so there
  // only a busy machine (other processes, steal) makes it UNKNOWN.
  const bool busy_only = !filter.empty();
  for (const auto& [run, side] : {std::pair<const RunResult*, const char*>{&b, "base run"},
                                  {&n, "new run"},
                                  {rb, "base reference run"},
                                  {rn, "new reference run"}})
    if (run && is_noisy(*run, busy_only) && c.note.empty())
      c.note = std::string(side) + " noisy: " + run->validity->reason;
  if (!c.note.empty()) {
    c.noisy = true;
    return c;
  }
  c.base_values = compared_values(b, rb, metric);
  c.new_values = compared_values(n, rn, metric);
  c.base = stats::summarize(c.base_values);
  c.neu = stats::summarize(c.new_values);
  c.spread = std::max(c.base.rel_spread, c.neu.rel_spread);
  if (c.base.median > 0 && std::isfinite(c.neu.median)) c.change = c.neu.median / c.base.median - 1.0;
  const std::size_t nb = c.base_values.size(), nn = c.new_values.size();
  const std::string reps = std::to_string(nb) + " vs " + std::to_string(nn) + " reps";
  if (nb < static_cast<std::size_t>(std::max(1, o.min_reps)) ||
      nn < static_cast<std::size_t>(std::max(1, o.min_reps))) {
    c.note = "too few reps: " + reps + " (need >= " + std::to_string(o.min_reps) + ")";
    return c;
  }
  c.p_value = stats::mann_whitney_u(c.base_values, c.new_values).p_value;
  const double min_p = stats::mann_whitney_min_p(nb, nn);
  if (min_p >= o.alpha)
    c.note = reps + " can never reach p < " + format_number("%g", o.alpha) +
             " (smallest possible p = " + format_number("%.3g", min_p) + "): use more reps";
  else if (!std::isfinite(c.change))
    c.note = "base median is not positive";
  if (!c.note.empty()) return c;
  const bool significant = c.p_value < o.alpha;
  const double gain = metric.better == Better::lower ? -c.change : c.change;  // > 0: an improvement
  c.verdict = significant && gain < -o.threshold  ? Verdict::slower
              : significant && gain > o.threshold ? Verdict::faster
                                                  : Verdict::same;
  return c;
}

}  // namespace

CompareReport compare_results(const ResultFile& base, const ResultFile& neu, const CompareOptions& options) {
  CompareReport r;
  r.options = options;
  r.base_name = base.name, r.new_name = neu.name;
  r.base_host = base.meta.host, r.new_host = neu.meta.host;
  if (!(options.alpha > 0 && options.alpha < 1)) throw ConfigError("alpha", "must be in (0, 1)");
  if (!(options.threshold >= 0)) throw ConfigError("threshold", "must be >= 0");
  if (options.min_reps < 1) throw ConfigError("min_reps", "must be >= 1");
  const auto filter = parse_params_filter(options.normalize_by);
  const SampleMetric metric = sample_metric(options.metric);
  r.metric_key = metric.key;
  r.metric_better = metric.better;
  r.metric_is_speed = metric.is_speed();
  r.metric = filter.empty() ? metric.key + " (" + enum_name(metric.unit) + ")"
                            : metric.key + " relative to the " + options.normalize_by + " run of the same file";
  auto find = [](const ResultFile& f, const std::string& id) -> const RunResult* {
    for (const RunResult& x : f.runs)
      if (x.id == id) return &x;
    return nullptr;
  };
  double log_sum = 0.0;
  for (const RunResult& b : base.runs) {
    const RunResult* n = find(neu, b.id);
    if (matches_filter(b.params, filter) || (n && matches_filter(n->params, filter))) {
      r.reference_runs.push_back(b.id);
    } else if (!n) {
      r.only_in_base.push_back(b.id);
    } else {
      r.runs.push_back(compare_run(base, b, neu, *n, filter, options, metric));
      const RunComparison& c = r.runs.back();
      if (c.base.median > 0 && c.neu.median > 0 && std::isfinite(c.base.median) && std::isfinite(c.neu.median)) {
        log_sum += std::log(c.neu.median / c.base.median);
        ++r.geomean_count;
      }
    }
  }
  for (const RunResult& n : neu.runs)
    if (!find(base, n.id)) (matches_filter(n.params, filter) ? r.reference_runs : r.only_in_new).push_back(n.id);
  if (r.geomean_count > 0) r.geomean_ratio = std::exp(log_sum / static_cast<double>(r.geomean_count));
  return r;
}

std::string compare_markdown(const CompareReport& r) {
  using detail::format_number;
  const bool ratio = !r.options.normalize_by.empty();
  const char* vf = ratio ? "%.3fx" : "%.2f";
  auto code = [](std::string s) {
    for (std::size_t i = 0; (i = s.find('|', i)) != std::string::npos; i += 2) s.insert(i, "\\");
    return "`" + s + "`";
  };
  auto pct = [&](double x) { return format_number("%+.1f%%", 100.0 * x); };
  std::string md = "## vecbench compare: `" + r.base_name + "` (base) vs `" + r.new_name + "` (new)\n\n";
  const std::string up = verdict_word(Verdict::faster, r.metric_is_speed),
                    down = verdict_word(Verdict::slower, r.metric_is_speed);
  md += "Metric: " + r.metric + ", per rep; " + (r.metric_better == Better::lower ? "lower" : "higher") +
        " is better.  \n";
  md += "Verdict: " + up + "/" + down + " when the two-sided Mann-Whitney U test gives p < " +
        format_number("%g", r.options.alpha) + " and the median changed by more than " +
        format_number("%g", 100 * r.options.threshold) + "%; SAME otherwise; UNKNOWN with fewer than " +
        std::to_string(r.options.min_reps) +
        " reps, too few reps to reach that p, or a run that did not finish (see notes).\n\n";
  MarkdownTable table({{"run"},
                       {"base", Align::right},
                       {"new", Align::right},
                       {"change", Align::right},
                       {"spread", Align::right},
                       {"p", Align::right},
                       {"verdict"}});
  std::string notes;
  for (const RunComparison& c : r.runs) {
    table.row({code(c.id), format_number(vf, c.base.median), format_number(vf, c.neu.median), pct(c.change),
               format_number("%.1f%%", 100.0 * c.spread), format_number("%.3g", c.p_value),
               verdict_word(c.verdict, r.metric_is_speed)});
    if (!c.note.empty()) notes += "- " + code(c.id) + ": " + c.note + "\n";
    if (!c.base_reference.empty() && !c.new_reference.empty() && c.base_reference != c.new_reference)
      notes += "- " + code(c.id) + ": references differ: base " + code(c.base_reference) + ", new " +
               code(c.new_reference) + "\n";
  }
  table.row(
      {"**geomean** (" + std::to_string(r.geomean_count) + " runs, new/base)", "", "", pct(r.geomean_ratio - 1.0)});
  md += table.str() + "\n";
  std::size_t slower = 0, faster = 0;
  for (const RunComparison& c : r.runs) slower += c.verdict == Verdict::slower, faster += c.verdict == Verdict::faster;
  md += "Result: " + std::to_string(slower) + " " + down + ", " + std::to_string(faster) + " " + up + " of " +
        std::to_string(r.runs.size()) + " runs compared.\n\n";
  if (r.runs.empty())
    md +=
        "**Nothing was compared: no run id is in both files** (exit status 2): check that both files come from "
        "the same experiment.\n\n";
  if (!notes.empty()) md += "Notes:\n" + notes + "\n";
  auto list = [&](const char* title, const std::vector<std::string>& ids) {
    if (ids.empty()) return;
    md += title;
    for (const auto& id : ids) md += "\n- " + code(id);
    md += "\n\n";
  };
  list("Only in base:", r.only_in_base);
  list("Only in new:", r.only_in_new);
  list("Reference runs (not compared):", r.reference_runs);
  if (!ratio && r.base_host != r.new_host)
    md += "Warning: base ran on `" + r.base_host + "`, new on `" + r.new_host +
          "`: absolute images/s are not comparable across machines; use --normalize-by "
          "strategy=sequential.\n";
  return md;
}

}  // namespace vecbench
