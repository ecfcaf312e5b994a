// `vecbench merge` (declared in app/merge.hpp).
#include "vecbench/app/merge.hpp"

#include <fstream>
#include <iostream>

#include "vecbench/output/output_lock.hpp"
#include "vecbench/results/result_types.hpp"

namespace vecbench {

int merge_command(const std::vector<std::string>& dirs, const std::vector<std::string>& results, const std::string& out,
                  std::ostream& info, std::ostream& log) {
  if (!results.empty()) {
    if (out.empty()) throw ConfigError("--out", "merge --results needs --out FILE for the merged result");
    if (!dirs.empty()) throw ConfigError("merge", "give result files after --results, or output directories, not both");
    std::vector<nlohmann::json> files;
    for (const auto& f : results) {
      std::ifstream in(f);
      if (!in) throw IoError(f, "cannot open result file");
      const auto j = nlohmann::json::parse(in, nullptr, false);
      if (j.is_discarded()) throw ResultFormatError(f, "", "not valid JSON");
      files.push_back(j);
    }
    const auto merged = merge_result_files(files, results, &log);
    atomic_write(out, merged.dump(2) + "\n");
    std::size_t ok = 0;
    for (const auto& r : merged["runs"]) ok += parse_run_status(r.value("status", std::string())) == RunStatus::ok;
    info << "merge: " << out << ": " << merged["runs"].size() << " runs (" << ok << " ok) from " << files.size()
         << " result files\n";
    return 0;
  }
  auto report = [&](const fs::path& target, const ManifestMerge& m) {
    for (const auto& note : m.notes) log << note << "\n";
    info << "merge: " << (target / "manifest.jsonl").string() << ": " << m.inputs << " inputs (" << m.ok << " ok, "
         << m.errors << " failed) from " << m.files.size() << " manifests";
    if (m.dropped) info << "; " << m.dropped << " ok lines dropped: their output is missing or incomplete";
    if (m.other_fp) info << "; " << m.other_fp << " lines of another fingerprint left out";
    info << "\n";
  };
  if (dirs.empty() && out.empty())
    throw ConfigError("merge", "give output directories (or --out DIR, or --results FILES --out FILE)");
  if (!out.empty() && !dirs.empty()) {
    std::vector<fs::path> v(dirs.begin(), dirs.end());
    std::error_code ec;
    fs::create_directories(out, ec);
    const OutputLock lock(out, -1);  // the only writer of `out` while merging
    report(out, merge_manifests(v, out));
    return 0;
  }
  for (const auto& d : dirs.empty() ? std::vector<std::string>{out} : dirs) {
    const OutputLock lock(d, -1);  // refused while a vectorize (or its shards) writes there
    report(d, merge_manifests({d}, d));
  }
  return 0;
}

}  // namespace vecbench
