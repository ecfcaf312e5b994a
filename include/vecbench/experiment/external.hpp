// External commands of an experiment (the peers: what a user would run instead of vecbench),
// run through the shell with their img/s parsed from what they print.
#pragma once
#include <regex>
#include <string>

#include "vecbench/core/run/metrics.hpp"
#include "vecbench/core/system/subprocess.hpp"
#include "vecbench/experiment/experiment.hpp"

namespace vecbench {

/// One run of an external command.
struct ExternalOutcome {
  bool ok = false;            ///< it exited 0 and printed a match for its regex
  double images_per_s = 0.0;  ///< the first group of the regex match (what the peer reports)
  double wall_s = 0.0;        ///< the whole command's wall time, start-up included, seconds
  std::size_t images = 0;     ///< the "images=N" it printed, else 0
  /// The output line the img/s came from: peers name what they ran there (versions, settings).
  std::string line;
  std::string reason;  ///< why not ok: exit status, missing match, and its output's tail
};

/// Runs `x.command` (stdout and stderr together) and parses its output.
inline ExternalOutcome run_external(const Experiment::External& x) {
  ExternalOutcome o;
  const auto t0 = Clock::now();
  const CommandResult r = run_command(x.command, Stderr::merge);
  o.wall_s = seconds_since(t0);
  std::smatch m;
  if (std::regex_search(r.output, m, std::regex("images=([0-9]+)"))) o.images = std::stoull(m[1].str());
  if (r.ok() && std::regex_search(r.output, m, std::regex(x.regex)) && m.size() > 1) {
    o.ok = true;
    o.images_per_s = std::stod(m[1].str());
    const auto at = static_cast<std::size_t>(m.position(0));
    const std::size_t from = r.output.rfind('\n', at) + 1;  // npos + 1 == 0: the first line
    o.line = r.output.substr(from, r.output.find('\n', at) - from);
    return o;
  }
  std::string tail = r.output.size() > 300 ? r.output.substr(r.output.size() - 300) : r.output;
  for (auto& c : tail)
    if (c == '\n') c = ' ';
  o.reason =
      "exit status " + std::to_string(r.exit_code) + (r.ok() ? ", no match for /" + x.regex + "/" : "") + ": " + tail;
  return o;
}

}  // namespace vecbench
