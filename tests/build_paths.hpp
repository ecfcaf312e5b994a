// The paths of this build that the tests use, defined in a file tests/CMakeLists.txt generates
// (build/tests/generated/build_paths.cpp) rather than passed as -D flags: then no test object
// depends on the folder the tree is in, and ccache finds the objects a clean clone in another
// folder compiled (tools/test.sh). Core-only builds have no vecbench: kExe is "" there.
#pragma once

namespace vecbench::test_paths {
extern const char* const kSourceDir;          // the source tree
extern const char* const kBinaryDir;          // the build tree
extern const char* const kDefaultModel;       // the exported default model (TorchScript)
extern const char* const kDefaultFusedModel;  // the same weights, fused and prepacked
extern const char* const kExe;                // the vecbench executable
extern const char* const kFaultExe;           // tests/vecbench_fault ("" in builds without MPI)
extern const char* const kCpuidMask;          // tools/cpuid_mask.c's LD_AUDIT library ("" off x86-64)
}  // namespace vecbench::test_paths

#define VECBENCH_SOURCE_DIR (::vecbench::test_paths::kSourceDir)
#define VECBENCH_BINARY_DIR (::vecbench::test_paths::kBinaryDir)
#define VECBENCH_DEFAULT_MODEL (::vecbench::test_paths::kDefaultModel)
#define VECBENCH_DEFAULT_FUSED_MODEL (::vecbench::test_paths::kDefaultFusedModel)
#define VECBENCH_EXE (::vecbench::test_paths::kExe)
#define VECBENCH_FAULT_EXE (::vecbench::test_paths::kFaultExe)
#define VECBENCH_CPUID_MASK (::vecbench::test_paths::kCpuidMask)
