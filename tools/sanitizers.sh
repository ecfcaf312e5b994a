#!/usr/bin/env bash
# ASan+UBSan and TSan builds of the torch/OpenCV-free core tests (pipeline, strategies on the
# stand-in model, queue, writer, results, compare). Debug builds at -O1 with line tables only
# (-g1: the sanitizers' stack traces name functions, files and lines; full -g costs compile time
# and gives them nothing more). The TSan build compiles only the test files of the suites it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
run_san() {  # run_san NAME FLAGS GTEST_FILTER [CORE_TEST_FILES]
  local name=$1 flags=$2 filter=$3 files=${4:-}
  echo "--- $name"
  cmake -S . -B "build-$name" -DVECBENCH_CORE_ONLY=ON -DVECBENCH_HEADER_TESTS=OFF -DCMAKE_BUILD_TYPE=Debug \
        -DCMAKE_CXX_FLAGS="$flags -fno-omit-frame-pointer -O1" -DCMAKE_CXX_FLAGS_DEBUG="-g1" \
        -DVECBENCH_CORE_TEST_FILES="$files" >/dev/null
  cmake --build "build-$name" -j"$JOBS" --target vecbench_core_tests
  "build-$name/tests/vecbench_core_tests" --gtest_filter="$filter" --gtest_brief=1
}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tools/tsan.supp"
run_san asan "-fsanitize=address,undefined -fno-sanitize-recover=all" "*"
# TSan: the threaded parts (strategies, queue, writer, ranks as threads); the report test spawns
# python, skip it. The files below hold every suite the filter names.
run_san tsan "-fsanitize=thread" "All/*:DataParallel*:ReplicaPool*:DeviceWorker*:Queue*:Writer*:Pipeline*:Distributed*:Trace*:DeviceDecode*" \
  "test_strategies.cpp;test_replica_pool.cpp;test_pipeline.cpp;test_distributed.cpp;test_trace.cpp;test_device_decode.cpp;test_resize_formula.cpp"
echo "sanitizers: clean"
