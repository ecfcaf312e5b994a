// The MPI implementation of vecbench's communicator: the only translation unit that includes
// mpi.h. Messages are MPI_BYTE buffers on MPI_COMM_WORLD; receives poll (MPI_Iprobe) and sleep
// between polls, so a waiting rank leaves the cores of its node to the ranks still working.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <iostream>
#include <mutex>
#include <thread>

#include "vecbench/dist/distributed.hpp"

namespace vecbench {
namespace {

class MpiComm : public Comm {
 public:
  MpiComm(int* argc, char*** argv) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    threads_ok_ = provided >= MPI_THREAD_SERIALIZED;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
      MPI_Comm_size(node, &local_size_);
      MPI_Comm_free(&node);
    }
  }
  ~MpiComm() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_size() const override { return local_size_; }
  bool connected() const override { return true; }
  std::string kind() const override { return "mpi"; }
  bool threads_ok() const override { return threads_ok_; }

  void send(int dest, int tag, const std::string& data) override {
    if (data.size() > static_cast<std::size_t>(INT_MAX))
      abort("vecbench: rank " + std::to_string(rank_) + ": message of " + std::to_string(data.size()) +
                " bytes is too large for MPI",
            1);
    std::lock_guard<std::mutex> lk(m_);  // MPI_THREAD_SERIALIZED: one MPI call at a time
    MPI_Send(data.data(), static_cast<int>(data.size()), MPI_BYTE, dest, tag, MPI_COMM_WORLD);
  }

  bool recv(int& source, int tag, std::string& data, double timeout_s) override {
    const auto t0 = std::chrono::steady_clock::now();
    auto pause = std::chrono::microseconds(20);
    for (;;) {
      int flag = 0;
      MPI_Status st;
      std::unique_lock<std::mutex> lk(m_);  // the probe and its receive, as one step
      MPI_Iprobe(source < 0 ? MPI_ANY_SOURCE : source, tag, MPI_COMM_WORLD, &flag, &st);
      if (flag) {
        int n = 0;
        MPI_Get_count(&st, MPI_BYTE, &n);
        data.assign(static_cast<std::size_t>(n), '\0');
        MPI_Recv(n > 0 ? &data[0] : nullptr, n, MPI_BYTE, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        source = st.MPI_SOURCE;
        return true;
      }
      lk.unlock();
      if (timeout_s >= 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s)
        return false;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
  }

  [[noreturn]] void abort(const std::string& message, int code) override {
    std::cerr << message << std::endl;
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  int rank_ = 0, size_ = 1, local_size_ = 1;
  bool threads_ok_ = false;
  std::mutex m_;  ///< serializes this process's MPI calls (send, probe + receive)
};

}  // namespace

std::unique_ptr<Comm> make_mpi_comm(int* argc, char*** argv) { return std::make_unique<MpiComm>(argc, argv); }

}  // namespace vecbench
