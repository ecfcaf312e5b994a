// vecbench_fault: the vecbench executable with a fault put around `vectorize`'s writer, for the
// tests that kill or hang one rank of an MPI job (test_mpi.cpp). VECBENCH_TEST_DIE_AFTER=N[@R][:hang]
// (testing/fault_injection.hpp) says after how many images, on which rank, and whether the process
// aborts or hangs; unset, it is vecbench. vecbench itself has no such hook.
#include "vecbench/app/cli.hpp"
#include "vecbench/testing/fault_injection.hpp"

int main(int argc, char** argv) {
  vecbench::CommandHooks hooks;
  hooks.wrap_writer = [](vecbench::ResultSink& writer,
                         const vecbench::Distribution& dist) -> std::unique_ptr<vecbench::ResultSink> {
    const vecbench::DieAfter d = vecbench::die_after_from_env(dist.rank());
    if (d.n <= 0) return nullptr;
    return std::make_unique<vecbench::DieAfterSink>(writer, d, dist.label());
  };
  return vecbench::run_cli(argc, argv, hooks);
}
