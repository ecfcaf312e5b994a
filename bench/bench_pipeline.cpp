// Micro-benchmarks of the pipeline pieces: decode per format and size (with and without
// reduced-DCT decode), each resize mode, queue hand-off, writers per format, strategies
// end-to-end on the stand-in model.
#include <benchmark/benchmark.h>

#include <thread>

#include "vecbench/core/run/queue.hpp"
#include "vecbench/input/decode.hpp"
#include "vecbench/input/image_files.hpp"
#include "vecbench/output/writer.hpp"
#include "vecbench/strategies/runner.hpp"
#include "vecbench/testing/stub_model.hpp"

using namespace vecbench;

namespace {

std::vector<std::uint8_t> encoded(int w, int h, const std::string& ext, bool gray = false) {
  cv::Mat img(h, w, CV_8UC3);
  cv::randu(img, 0, 255);
  cv::GaussianBlur(img, img, cv::Size(0, 0), 3);  // photo-like, compressible
  if (gray) cv::cvtColor(img, img, cv::COLOR_BGR2GRAY);
  std::vector<std::uint8_t> out;
  cv::imencode(ext, img, out, ext == ".jpg" ? std::vector<int>{cv::IMWRITE_JPEG_QUALITY, 90} : std::vector<int>{});
  return out;
}

void BM_Decode(benchmark::State& st, const std::string& ext, bool fast) {
  const int w = static_cast<int>(st.range(0)), h = w * 3 / 4;
  const auto bytes = encoded(w, h, ext);
  DecodeOptions o;
  o.fast = fast;
  for (auto _ : st) benchmark::DoNotOptimize(decode_rgb(bytes, "bench" + ext, o).data);
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK_CAPTURE(BM_Decode, jpeg, std::string(".jpg"), false)
    ->Arg(500)
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, jpeg_fast, std::string(".jpg"), true)
    ->Arg(500)
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, png, std::string(".png"), false)->Arg(500)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, webp, std::string(".webp"), false)->Arg(500)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, bmp, std::string(".bmp"), false)->Arg(500)->Unit(benchmark::kMillisecond);

void BM_Resize(benchmark::State& st, ResizeMode mode) {
  const int w = static_cast<int>(st.range(0)), h = w * 3 / 4;
  std::vector<std::uint8_t> img(static_cast<std::size_t>(w) * h * 3, 77);
  std::vector<float> out(3 * 299 * 299);
  for (auto _ : st) {
    resize_rgb_to_chw(img.data(), h, w, static_cast<std::size_t>(w) * 3, 299, mode, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK_CAPTURE(BM_Resize, tf_legacy, ResizeMode::tf_legacy)->Arg(500)->Arg(2048)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Resize, bilinear, ResizeMode::bilinear)->Arg(500)->Arg(2048)->Unit(benchmark::kMicrosecond);

void BM_BatchAssembly(benchmark::State& st) {
  const int b = static_cast<int>(st.range(0));
  SyntheticSource src(static_cast<std::size_t>(b));
  MemorySink sink(src.size());
  Metrics m({"cpu"});
  const auto todo = all_indices(src.size());
  Batch batch;
  for (auto _ : st) load_batch(src, todo, 0, todo.size(), 299, batch, sink, m);
  st.SetItemsProcessed(st.iterations() * b);
}
BENCHMARK(BM_BatchAssembly)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond);

void BM_QueueHandoff(benchmark::State& st) {
  for (auto _ : st) {
    BoundedQueue<int> q(static_cast<std::size_t>(st.range(0)));
    std::thread prod([&] {
      for (int i = 0; i < 10000; ++i) q.push(i);
      q.close();
    });
    long sum = 0;
    while (auto v = q.pop()) sum += *v;
    prod.join();
    benchmark::DoNotOptimize(sum);
  }
  st.SetItemsProcessed(st.iterations() * 10000);
}
BENCHMARK(BM_QueueHandoff)->Arg(4)->Arg(64)->Unit(benchmark::kMillisecond);

void BM_Writer(benchmark::State& st, OutputFormat fmt) {
  const std::size_t n = 64;
  SyntheticSource src(n);
  std::vector<float> f(2048, 0.123f);
  const fs::path dir = fs::temp_directory_path() / ("vecbench_bench_writer_" + std::to_string(::getpid()));
  for (auto _ : st) {
    st.PauseTiming();
    fs::remove_all(dir);
    st.ResumeTiming();
    WriterOptions o;
    o.format = fmt;
    o.out_dir = dir;
    o.resume = false;
    OutputWriter w(src, o);
    for (std::size_t i = 0; i < n; ++i) w.on_features(i, f.data(), 2048);
    w.finish();
  }
  fs::remove_all(dir);
  st.SetItemsProcessed(st.iterations() * static_cast<long>(n));
}
BENCHMARK_CAPTURE(BM_Writer, vc, OutputFormat::vc)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Writer, npy, OutputFormat::npy)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Writer, shards, OutputFormat::shards)->Unit(benchmark::kMillisecond);

void BM_StrategyStub(benchmark::State& st, const std::string& strategy) {
  testing::StubOptions o;
  o.seconds_per_image = 0.002;
  SyntheticSource src(64);
  RunSettings s;
  s.batch_size = 4;
  const auto devs = expand_devices("cpu/2");
  for (auto _ : st) {
    MemorySink sink(src.size());
    run_strategy(strategy, src, all_indices(src.size()), devs, testing::stub_factory(o), sink, s, o.input_size);
  }
  st.SetItemsProcessed(st.iterations() * 64);
}
BENCHMARK_CAPTURE(BM_StrategyStub, naive, std::string("naive"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_StrategyStub, sequential, std::string("sequential"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_StrategyStub, sharded, std::string("sharded"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_StrategyStub, data_parallel, std::string("data-parallel"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_StrategyStub, mirrored, std::string("mirrored"))->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
