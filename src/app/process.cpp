// The process-wide state of a command: stop flag, signals, the process group, default models.
#include <csignal>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>

#include "vecbench/app/commands.hpp"
#include "vecbench/core/system/host.hpp"

namespace vecbench {
namespace fs = std::filesystem;
namespace {
std::atomic<bool> g_stop{false};
std::unique_ptr<Comm> g_comm;
std::unique_ptr<Distribution> g_dist;

extern "C" void on_signal(int sig) {
  if (g_stop.exchange(true)) {  // second Ctrl-C: die now (complete files are already in place)
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

/// P/share/vecbench when this executable is P/bin/vecbench of `cmake --install` (its tools are
/// there), else empty: a build folder's binary, whose files are the build's and its source tree's.
const fs::path& installed_share() {
  static const fs::path share = [] {
    const fs::path exe = running_executable();
    if (exe.empty()) return fs::path();
    std::error_code ec;
    const fs::path s = exe.parent_path().parent_path() / "share" / "vecbench";
    return fs::is_regular_file(s / "tools" / "export_inception.py", ec) ? s : fs::path();
  }();
  return share;
}

std::string installed_or(const char* file, const std::string& built) {
  return installed_share().empty() ? built : (installed_share() / "models" / file).string();
}
}  // namespace

std::string default_model() { return installed_or("inception_tf2015_seed0.pt", VECBENCH_DEFAULT_MODEL); }
std::string default_fused_model() {
  return installed_or("inception_tf2015_seed0_fused.pt", VECBENCH_DEFAULT_FUSED_MODEL);
}
std::string tools_dir() {
  return installed_share().empty() ? std::string(VECBENCH_SOURCE_DIR) + "/tools"
                                   : (installed_share() / "tools").string();
}

std::atomic<bool>& stop_flag() { return g_stop; }

void install_signal_handlers() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}

Distribution& open_distribution(const DistArgs& d, int* argc, char*** argv) {
  if (!g_dist) {
    std::function<std::unique_ptr<Comm>()> mpi;
#ifdef VECBENCH_WITH_MPI
    mpi = [argc, argv] { return make_mpi_comm(argc, argv); };
#endif
    (void)argc;
    (void)argv;
    g_comm = open_process_group(d.shard_index, d.num_shards, mpi, std::cerr);
    g_dist = std::make_unique<Distribution>(*g_comm, DistributionOptions{d.mode, d.chunk, d.timeout_s});
  }
  return *g_dist;
}

Distribution& current_distribution() { return open_distribution(DistArgs{}, nullptr, nullptr); }

int close_distribution(int rc) {
  g_dist.reset();
  g_comm.reset();
  return rc;
}

void abort_all_ranks(const std::string& reason) {
  if (g_comm && g_comm->connected() && g_comm->size() > 1)  // end every rank, with this one's reason
    g_comm->abort("vecbench: error: rank " + std::to_string(g_comm->rank()) + " (" + host_name() + "): " + reason +
                      " (aborting all " + std::to_string(g_comm->size()) + " ranks)",
                  1);
}

}  // namespace vecbench
