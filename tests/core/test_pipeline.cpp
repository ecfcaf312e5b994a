// Pipeline pieces without LibTorch or OpenCV: queue, npy, writer (atomic files, resume,
// manifest), experiment validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "build_paths.hpp"
#include "vecbench/core/run/queue.hpp"
#include "vecbench/experiment/experiment.hpp"
#include "vecbench/output/writer.hpp"
#include "vecbench/testing/named_source.hpp"
#include "vecbench/testing/temp_dir.hpp"

using namespace vecbench;

namespace {
inline fs::path tmpdir(const std::string& name) { return vecbench::testing::fresh_temp_dir(name); }

using vecbench::testing::NamedSource;

std::vector<nlohmann::json> manifest(const fs::path& dir) {
  std::vector<nlohmann::json> v;
  std::ifstream in(dir / "manifest.jsonl");
  std::string line;
  while (std::getline(in, line)) v.push_back(nlohmann::json::parse(line));
  return v;
}
}  // namespace

TEST(Queue, ManyProducersAndConsumersLoseNothing) {
  BoundedQueue<int> q(3);
  std::atomic<long> sum{0};
  std::atomic<int> count{0};
  std::vector<std::thread> prod, cons;
  for (int p = 0; p < 3; ++p)
    prod.emplace_back([&, p] {
      for (int i = 0; i < 1000; ++i) ASSERT_TRUE(q.push(p * 1000 + i));
    });
  for (int c = 0; c < 2; ++c)
    cons.emplace_back([&] {
      while (auto v = q.pop()) {
        sum += *v;
        ++count;
        EXPECT_LE(q.size(), q.capacity());
      }
    });
  for (auto& t : prod) t.join();
  q.close();
  for (auto& t : cons) t.join();
  EXPECT_EQ(count.load(), 3000);
  EXPECT_EQ(sum.load(), 3000L * 2999 / 2);
}

TEST(Queue, AbortWakesBlockedProducersAndConsumers) {
  BoundedQueue<int> full(1), empty(1);
  ASSERT_TRUE(full.push(1));
  std::thread p([&] { EXPECT_FALSE(full.push(2)); });
  std::thread c([&] { EXPECT_FALSE(empty.pop().has_value()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  full.abort();
  empty.abort();
  p.join();
  c.join();
  EXPECT_FALSE(full.pop().has_value());  // aborted: queued items dropped
}

TEST(Queue, CloseLetsConsumersDrain) {
  BoundedQueue<int> q(4);
  q.push(1);
  q.push(2);
  q.close();
  EXPECT_FALSE(q.push(3));
  EXPECT_EQ(*q.pop(), 1);
  EXPECT_EQ(*q.pop(), 2);
  EXPECT_FALSE(q.pop().has_value());
}

TEST(Npy, RoundTripFloatAndUint8) {
  const fs::path d = tmpdir("npy");
  std::vector<float> f = {1.5f, -2.25f, 3e-8f, 4e8f, 0, 7};
  npy::save_f32(d / "f.npy", f.data(), {2, 3});
  const auto a = npy::load(d / "f.npy");
  EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(npy::as_f32(a), f);
  std::vector<std::uint8_t> u = {1, 2, 3, 250};
  npy::save_u8(d / "u.npy", u.data(), {4});
  const auto b = npy::load(d / "u.npy");
  EXPECT_EQ(b.descr, "|u1");
  EXPECT_EQ(b.data, u);
  std::ofstream(d / "bad.npy") << "nope";
  EXPECT_THROW(npy::load(d / "bad.npy"), IoError);
  fs::remove_all(d);
}

TEST(Writer, VcIsNumpySavetxtLayout) {
  const float f[3] = {1.0f, -0.5f, 0.1f};
  EXPECT_EQ(
      vc_text(f, 3),
      "1.000000000000000000e+00\n-5.000000000000000000e-01\n1.000000014901161194e-01\n");  // np.savetxt of float32 [1,
                                                                                           // -0.5, 0.1]
}

TEST(Writer, VcTextEqualsPrintfsForEveryKindOfFloat) {
  std::mt19937 g(7);
  std::vector<float> f = {0.0f, -0.0f, 1e-45f, -1.17549435e-38f, 3.4028235e38f, 1.0f / 3.0f, 123456.789f};
  for (int i = 0; i < 20000; ++i) {  // features: mostly O(1) activations, some zeros, any exponent
    std::uint32_t bits = g();
    float x;
    std::memcpy(&x, &bits, sizeof x);
    if (std::isfinite(x)) f.push_back(x);
    f.push_back(std::ldexp(static_cast<float>(g() % 100000) / 7.0f, static_cast<int>(g() % 20) - 10));
  }
  std::string want;
  char buf[64];
  for (float x : f) want.append(buf, static_cast<std::size_t>(std::snprintf(buf, sizeof buf, "%.18e\n", double(x))));
  EXPECT_EQ(vc_text(f.data(), static_cast<int>(f.size())), want);
}

TEST(Writer, NamesCollisionsAndManifest) {
  const fs::path d = tmpdir("writer");
  NamedSource src({"/data/a/x.jpg", "/data/b/x.jpg", "../up.jpg", "/data/a/x.jpg"}, "/data");
  WriterOptions o;
  o.format = OutputFormat::npy;
  o.out_dir = d;
  o.quiet = true;
  {
    OutputWriter w(src, o);
    EXPECT_EQ(w.output_name(0), "a/x.jpg.npy");
    EXPECT_EQ(w.output_name(1), "b/x.jpg.npy");
    EXPECT_EQ(w.output_name(2), "_up_/up.jpg.npy");
    // The same name twice: distinct outputs, the second made unique by a hash, never by a suffix guess.
    EXPECT_EQ(w.output_name(3).rfind("a/x.jpg~", 0), 0u) << w.output_name(3);
    EXPECT_NE(w.output_name(3), w.output_name(0));
    const float f[2] = {1, 2};
    w.on_features(0, f, 2);
    w.on_error(1, "/data/b/x.jpg: injected");
    w.finish();
    EXPECT_EQ(w.failed(), 1u);
  }
  const auto m = manifest(d);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0]["status"], "ok");
  EXPECT_EQ(m[0]["output"], "a/x.jpg.npy");
  EXPECT_EQ(m[1]["status"], "error");
  EXPECT_EQ(m[1]["error"], "/data/b/x.jpg: injected");
  // Resume: the done output is skipped, the failed one is retried.
  OutputWriter again(src, o);
  EXPECT_EQ(again.pending(), (std::vector<std::size_t>{1, 2, 3}));
  fs::remove_all(d);
}

TEST(Writer, ShardsResumeFromManifestAndSurviveACutLine) {
  const fs::path d = tmpdir("shards");
  NamedSource src({"i0", "i1", "i2", "i3", "i4"});
  WriterOptions o;
  o.format = OutputFormat::shards;
  o.out_dir = d;
  o.shard_rows = 2;
  {
    OutputWriter w(src, o);
    for (std::size_t i : {0, 1, 2}) {
      const float f[2] = {static_cast<float>(i), 0.5f};
      w.on_features(i, f, 2);
    }
    // no finish(): like a kill, the partial shard (i2) is lost; the full one (i0, i1) stays
    // ... but the destructor flushes; emulate a kill by checking before destruction.
    EXPECT_TRUE(fs::exists(d / "shard-00000.npy"));
    EXPECT_FALSE(fs::exists(d / "shard-00001.npy"));
  }
  // Now shard-00001 holds i2 (flushed by the destructor). Append a line cut by a kill.
  std::ofstream(d / "manifest.jsonl", std::ios::app) << "{\"input\": \"i3\", \"sha";
  OutputWriter w(src, o);
  EXPECT_EQ(w.pending(), (std::vector<std::size_t>{3, 4}));
  const float f[2] = {3, 0.5f};
  w.on_features(3, f, 2);
  w.finish();
  EXPECT_TRUE(fs::exists(d / "shard-00002.npy"));  // numbering continues
  const auto s = npy::as_f32(npy::load(d / "shard-00002.npy"));
  EXPECT_EQ(s, (std::vector<float>{3, 0.5f}));
  fs::remove_all(d);
}

TEST(Writer, StaleTempFilesAreRemoved) {
  const fs::path d = tmpdir("stale");
  std::ofstream(d / ".x.npy.tmp.123") << "partial";
  NamedSource src({"a"});
  WriterOptions o;
  o.out_dir = d;
  OutputWriter w(src, o);
  EXPECT_FALSE(fs::exists(d / ".x.npy.tmp.123"));
  fs::remove_all(d);
}

TEST(Experiment, ValidNamesEveryKeyItUses) {
  const auto e = parse_experiment(nlohmann::json::parse(R"({
    "name": "x", "images": {"synthetic": 8},
    "matrix": [{"strategy": ["sequential"], "devices": "cpu"}, {"strategy": ["naive", "sharded"], "devices": ["cpu/2"], "batch": [1, 8]}],
    "repetitions": 5, "interleave": false, "time_budget_s": 30, "engine": "onednn", "winograd": false})"));
  ASSERT_EQ(e.matrices.size(), 2u);
  EXPECT_EQ(e.model.engine, EngineKind::onednn);
  EXPECT_FALSE(e.model.winograd);
  EXPECT_EQ(parse_experiment(nlohmann::json::parse(R"({"name": "x", "images": {"synthetic": 1}})")).model.engine,
            EngineKind::torchscript);
  EXPECT_EQ(e.matrices[1].batch_sizes, (std::vector<int>{1, 8}));
  ASSERT_EQ(e.matrices[0].devices.size(), 1u);  // parsed as the file is read, its text kept
  EXPECT_EQ(e.matrices[0].devices[0].text(), "cpu");
  EXPECT_EQ(e.matrices[1].devices[0].virtual_count(0), 2);
  EXPECT_EQ(e.repetitions, 5);
  EXPECT_FALSE(e.interleave);
}

TEST(Experiment, BadKeysAndValuesAreNamed) {
  auto err = [](const char* text) {
    try {
      parse_experiment(nlohmann::json::parse(text), "exp.json");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(err(R"({"name":"x","images":{"synthetic":2},"repetitons":3})").find("exp.json: repetitons: unknown key"),
            std::string::npos);
  EXPECT_NE(err(R"({"name":"x","images":{"synthetic":2},"matrix":{"strategy":["fast"]}})")
                .find("matrix.strategy[0]: unknown strategy 'fast'"),
            std::string::npos);
  EXPECT_NE(err(R"({"name":"x","images":{"synthetic":2},"matrix":[{"batch":[0]}]})").find("matrix[0].batch[0]"),
            std::string::npos);
  EXPECT_NE(err(R"({"name":"x","images":{"synthetic":2},"repetitions":"3"})").find("repetitions: wrong type"),
            std::string::npos);
  EXPECT_NE(err(R"({"name":"x","images":{"dir":"a","list":"b"}})").find("images: give exactly one"), std::string::npos);
  EXPECT_NE(err(R"({"images":{"synthetic":2}})").find("name: required"), std::string::npos);
  EXPECT_NE(err(R"({"name":"../x","images":{"synthetic":2}})").find("name: must be a plain"), std::string::npos);
  EXPECT_NE(
      err(R"({"name":"x","images":{"generate":{"count":3,"formats":["gif"]}}})").find("images.generate.formats[0]"),
      std::string::npos);
  EXPECT_NE(err(R"({"name":"x","images":{"synthetic":2},"matrix":{"resize":["nearest"]}})").find("matrix.resize[0]"),
            std::string::npos);
  EXPECT_NE(err(R"({"name":"x","images":{"synthetic":2},"engine":"tvm"})").find("engine: unknown engine 'tvm'"),
            std::string::npos);
}

TEST(Experiment, ShippedExperimentsAreValid) {
  for (const auto& e : fs::directory_iterator(fs::path(VECBENCH_SOURCE_DIR) / "experiments"))
    if (e.path().extension() == ".json") {
      EXPECT_NO_THROW(load_experiment(e.path().string())) << e.path();
    }
}
