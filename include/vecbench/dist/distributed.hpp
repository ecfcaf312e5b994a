// Scale-out across processes ("ranks"): the small communicator interface that MPI lives behind
// (src/dist/mpi_comm.cpp is the only translation unit that includes mpi.h), a stand-in for one
// process or for independent shards (Slurm tasks without MPI), and how a process finds out how
// it was started (mpirun, srun, --shard-index/--num-shards).
#pragma once
#include <sched.h>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "vecbench/core/base/enum_names.hpp"
#include "vecbench/core/base/error.hpp"
#include "vecbench/core/run/device.hpp"

namespace vecbench {

/// Message tags of vecbench's protocol between ranks.
enum CommTag : int { kTagCollective = 1, kTagRequest = 2, kTagWork = 3, kTagProgress = 4 };

/// A group of cooperating processes. Messages are byte strings; the collectives are built on
/// point-to-point messages and wait politely (sleeping between polls, so that a rank that is
/// done does not steal the cores of a rank on the same node that still works).
/// Where threads_ok(), several threads of a process may call into a Comm (MPI's calls are
/// serialized inside it); otherwise only one thread ever does.
class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Ranks on this rank's node (they split its cores); 1 when unknown.
  virtual int local_size() const { return 1; }
  /// Whether messages reach the other ranks (false for independent shards and one process).
  virtual bool connected() const = 0;
  /// "mpi", "shards" or "single".
  virtual std::string kind() const = 0;
  /// Whether a second thread may talk while the main thread does not (MPI_THREAD_SERIALIZED).
  virtual bool threads_ok() const { return true; }
  virtual void send(int dest, int tag, const std::string& data) = 0;
  /// Receives the next message with `tag` from `source` (-1: any rank; set to the sender).
  /// Waits at most `timeout_s` seconds (< 0: for ever); false on timeout.
  virtual bool recv(int& source, int tag, std::string& data, double timeout_s) = 0;
  /// Ends the whole job: prints `message` (naming this rank) and makes every rank exit.
  [[noreturn]] virtual void abort(const std::string& message, int code) = 0;

  /// Rank 0 of a connected group, or any process of a disconnected one: the one that reports.
  bool leader() const { return !connected() || rank() == 0; }

  /// Rank 0 gets every rank's `mine`, by rank; other ranks get {}. Disconnected: {mine}.
  std::vector<std::string> gather(const std::string& mine) {
    if (!connected() || size() == 1) return {mine};
    if (rank() != 0) {
      send(0, kTagCollective, mine);
      return {};
    }
    std::vector<std::string> all(static_cast<std::size_t>(size()));
    all[0] = mine;
    for (int r = 1; r < size(); ++r) {
      int src = r;
      recv(src, kTagCollective, all[static_cast<std::size_t>(r)], -1);
    }
    return all;
  }
  /// Every rank gets rank 0's `value`.
  std::string broadcast(const std::string& value) {
    if (!connected() || size() == 1) return value;
    if (rank() == 0) {
      for (int r = 1; r < size(); ++r) send(r, kTagCollective, value);
      return value;
    }
    std::string v;
    int src = 0;
    recv(src, kTagCollective, v, -1);
    return v;
  }
  void barrier() {
    gather("");
    broadcast("");
  }
};

/// One process, or one of N independent shards (no messages: each shard works alone).
class LocalComm : public Comm {
 public:
  LocalComm(int rank = 0, int size = 1) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool connected() const override { return false; }
  std::string kind() const override { return size_ > 1 ? "shards" : "single"; }
  void send(int, int, const std::string&) override { throw std::logic_error("LocalComm::send: no peers"); }
  bool recv(int&, int, std::string&, double) override { throw std::logic_error("LocalComm::recv: no peers"); }
  [[noreturn]] void abort(const std::string& message, int code) override {
    std::cerr << message << std::endl;
    std::exit(code);
  }

 private:
  int rank_, size_;
};

/// Starts MPI and returns the world communicator (src/dist/mpi_comm.cpp; only in builds with MPI,
/// where VECBENCH_WITH_MPI is defined). Call once, before any other thread exists.
std::unique_ptr<Comm> make_mpi_comm(int* argc, char*** argv);

/// An integer environment variable, or `fallback` when unset or not a number.
inline long env_long(const char* name, long fallback = -1) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return end && *end == '\0' ? x : fallback;
}

/// The environment variable that shows this process was started by an MPI launcher (mpirun,
/// mpiexec, srun with PMI/PMIx), or "" when none is set.
inline std::string mpi_launcher_variable() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return v;
  return "";
}

/// Cores this process may run on: its CPU affinity mask (mpirun --bind-to, Slurm
/// --cpus-per-task, taskset), else every core of the machine.
inline int process_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return hardware_cores();
}

/// Cores the CPU replicas of this rank split: the affinity mask when the launcher narrowed it,
/// else the node's cores divided among the ranks on the node.
inline int rank_cpu_cores(const Comm& comm) {
  const int mine = process_cores();
  if (mine < hardware_cores() || comm.local_size() <= 1) return mine;
  return std::max(1, mine / comm.local_size());
}

/// Which shard of the input list this process takes when no MPI connects the processes.
/// Where a process's shard came from.
enum class ShardOrigin { none, flags, slurm, ompi };
template <>
struct EnumNames<ShardOrigin> {
  static constexpr const char* what = "shard origin";
  static constexpr std::array<std::pair<ShardOrigin, const char*>, 4> names = {
      {{ShardOrigin::none, "one process"},
       {ShardOrigin::flags, "--shard-index/--num-shards"},
       {ShardOrigin::slurm, "SLURM_PROCID/SLURM_NTASKS"},
       {ShardOrigin::ompi, "OMPI_COMM_WORLD_RANK/SIZE"}}};
};

struct ShardSpec {
  int index = 0;
  int count = 1;
  ShardOrigin from = ShardOrigin::none;  ///< the flags, Slurm's variables or Open MPI's
};

/// Shards from --shard-index/--num-shards (both, or neither: -1/0), else from
/// SLURM_PROCID/SLURM_NTASKS (srun), else from OMPI_COMM_WORLD_RANK/SIZE when `use_ompi`
/// (mpirun of a build without MPI: static shards without messages). ConfigError when invalid.
inline ShardSpec resolve_shards(int index, int count, bool use_ompi) {
  ShardSpec s;
  if (index >= 0 || count > 0) {
    if (index < 0 || count <= 0) throw ConfigError("--shard-index/--num-shards", "give both or neither");
    if (index >= count)
      throw ConfigError("--shard-index", std::to_string(index) + " is not below --num-shards " + std::to_string(count));
    s = {index, count, ShardOrigin::flags};
    return s;
  }
  const long pid = env_long("SLURM_PROCID"), ntasks = env_long("SLURM_NTASKS");
  if (pid >= 0 && ntasks > 1 && pid < ntasks)
    return {static_cast<int>(pid), static_cast<int>(ntasks), ShardOrigin::slurm};
  if (use_ompi) {
    const long r = env_long("OMPI_COMM_WORLD_RANK"), n = env_long("OMPI_COMM_WORLD_SIZE");
    if (r >= 0 && n > 1 && r < n) return {static_cast<int>(r), static_cast<int>(n), ShardOrigin::ompi};
  }
  return s;
}

/// The process group of one command: MPI when this build has it (`mpi` is set) and an MPI
/// launcher started the process with more than one rank; else shards (--shard-index/--num-shards
/// or Slurm's variables); else one process. Notes go to `log`.
inline std::unique_ptr<Comm> open_process_group(int shard_index, int num_shards,
                                                const std::function<std::unique_ptr<Comm>()>& mpi, std::ostream& log) {
  const std::string launcher = mpi_launcher_variable();
  if (!launcher.empty() && mpi) {
    auto c = mpi();
    if (c->size() > 1) {
      if (shard_index >= 0 || num_shards > 0)
        c->abort("vecbench: error: --shard-index/--num-shards cannot be combined with " + std::to_string(c->size()) +
                     " MPI ranks (MPI shares the inputs itself)",
                 1);
      return c;
    }
    c.reset();  // a single MPI rank: behave as one process (or as a Slurm shard)
  }
  const bool use_ompi = !mpi && std::getenv("OMPI_COMM_WORLD_SIZE");  // Open MPI's mpirun started it
  const ShardSpec s = resolve_shards(shard_index, num_shards, use_ompi);
  if (s.from == ShardOrigin::ompi)
    log << "vecbench: note: started by mpirun, but this vecbench was built without MPI: static shards only "
           "(no --distribution dynamic, no merged manifest; run `vecbench merge` afterwards)\n";
  if (s.count > 1) {
    log << "vecbench: shard " << s.index << " of " << s.count << " (from " << enum_name(s.from) << ")\n";
    return std::make_unique<LocalComm>(s.index, s.count);
  }
  return std::make_unique<LocalComm>();
}

}  // namespace vecbench
