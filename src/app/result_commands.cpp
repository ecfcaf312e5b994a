// `vecbench compare` and `vecbench report`: result files (results/) in, a verdict table or a
// report folder out.
#include <exception>
#include <iostream>

#include "vecbench/app/commands.hpp"
#include "vecbench/results/compare.hpp"
#include "vecbench/results/report.hpp"

namespace vecbench {

int cmd_compare(const std::string& base, const std::string& next, const CompareOptions& opt) {
  try {
    const auto report = compare_results(load_result(base), load_result(next), opt);
    std::cout << compare_markdown(report);
    return compare_exit_code(report);
  } catch (const std::exception& e) {  // a broken comparison is not a regression
    std::cerr << "vecbench compare: error: " << e.what() << "\n";
    return kCompareUnusable;
  }
}

int cmd_report(const std::vector<std::string>& inputs, const std::string& out) {
  std::vector<ResultFile> files;
  std::vector<fs::path> sources;
  for (const auto& f : inputs) {
    files.push_back(load_result(f));
    sources.emplace_back(f);
  }
  write_report(files, out, VECBENCH_PYTHON, tools_dir() + "/plot_results.py", sources);
  std::cout << "report: " << (fs::path(out) / "report.md").string() << "\n";
  return 0;
}

}  // namespace vecbench
