#include <gtest/gtest.h>

#include "vecbench/core/run/device.hpp"

using namespace vecbench;

TEST(Devices, CpuSplitsCores) {
  DeviceOptions o;
  o.cpu_cores = 5;
  auto d = expand_devices("cpu/2", o);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].threads, 3);
  EXPECT_EQ(d[1].threads, 2);
  EXPECT_EQ(d[0].name(), "cpu/2#0");
  EXPECT_EQ(d[1].name(), "cpu/2#1");
  EXPECT_EQ(expand_devices("cpu", o)[0].threads, 5);
  EXPECT_EQ(expand_devices("cpu", o)[0].name(), "cpu");
  o.cpu_cores = 2;
  auto three = expand_devices("cpu/3", o);
  ASSERT_EQ(three.size(), 3u);
  for (auto& v : three) EXPECT_EQ(v.threads, 1);
}

TEST(Devices, ThreadsOverride) {
  DeviceOptions o;
  o.cpu_cores = 8;
  o.threads_per_replica = 2;
  for (auto& v : expand_devices("cpu/3", o)) EXPECT_EQ(v.threads, 2);
}

TEST(Devices, Cuda) {
  DeviceOptions o;
  o.cuda_devices = 2;
  o.memory_cap_gb = 4;
  auto d = expand_devices("cuda:1/3", o);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[2].name(), "cuda:1/3#2");
  EXPECT_EQ(d[2].torch_device(), "cuda:1");
  EXPECT_DOUBLE_EQ(d[0].memory_cap_gb, 4.0);
  EXPECT_EQ(expand_devices("cuda", o).size(), 2u);
  EXPECT_EQ(expand_devices("cuda,cpu", o).size(), 3u);
}

TEST(Devices, BadSpecsNameTheProblem) {
  DeviceOptions o;
  EXPECT_THROW(expand_devices("cuda:0", o), ConfigError);  // no GPU
  EXPECT_THROW(expand_devices("cuda", o), ConfigError);
  EXPECT_THROW(expand_devices("tpu", o), ConfigError);
  EXPECT_THROW(expand_devices("cpu/0", o), ConfigError);
  EXPECT_THROW(expand_devices("cpu/x", o), ConfigError);
  EXPECT_THROW(expand_devices("", o), ConfigError);
  try {
    expand_devices("gpu:0", o);
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("devices"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("gpu:0"), std::string::npos);
  }
}

TEST(DevicesSpec, ParsesOnceWhatEachPartIs) {
  const DevicesSpec s = DevicesSpec::parse("cpu/2, cuda:0/3 ,cuda");
  ASSERT_EQ(s.entries().size(), 3u);
  EXPECT_EQ(s.entries()[0].kind, DeviceKind::cpu);
  EXPECT_EQ(s.entries()[0].count, 2);
  EXPECT_EQ(s.entries()[1].kind, DeviceKind::cuda);
  EXPECT_EQ(s.entries()[1].ordinal, 0);
  EXPECT_EQ(s.entries()[1].count, 3);
  EXPECT_TRUE(s.entries()[2].every_gpu());
  EXPECT_TRUE(s.any_cuda());
  EXPECT_FALSE(DevicesSpec::parse("cpu/4").any_cuda());
  EXPECT_EQ(s.text(), "cpu/2, cuda:0/3 ,cuda");
}

TEST(DevicesSpec, CudaIsEveryGpuOfTheMachineInTheCountAndTheExpansionAlike) {
  // "cuda" is each GPU the machine has: the count and the expansion give the same answer, for
  // every spec (spaces anywhere, counts, one GPU or all), on machines with 1 and 4 GPUs
  for (const char* spec :
       {"cuda", "cuda:0/3", "cpu, cuda", "cpu/2,cuda/2", "cuda:0 / 3", " cpu / 2 ", "cuda:0,cuda:0/2"})
    for (int gpus : {1, 4}) {
      DeviceOptions o;
      o.cuda_devices = gpus;
      o.cpu_cores = 2;
      const DevicesSpec s = DevicesSpec::parse(spec);
      EXPECT_EQ(static_cast<std::size_t>(s.virtual_count(gpus)), s.expand(o).size()) << spec << " on " << gpus;
      EXPECT_EQ(s.expand(o).size(), expand_devices(spec, o).size()) << spec;
    }
  EXPECT_EQ(DevicesSpec::parse("cuda").virtual_count(4), 4);
  EXPECT_EQ(DevicesSpec::parse("cuda/2").virtual_count(4), 8);
  EXPECT_EQ(DevicesSpec::parse("cuda:0/3").virtual_count(4), 3);
  EXPECT_EQ(DevicesSpec::parse("cpu / 3").virtual_count(0), 3);
}

TEST(DevicesSpec, TheSyntaxIsCheckedWithoutTheMachine) {
  // an index the machine lacks parses (an experiment file written elsewhere); expanding refuses it
  const DevicesSpec s = DevicesSpec::parse("cuda:7/2");
  EXPECT_EQ(s.virtual_count(0), 2);
  EXPECT_THROW(s.expand({}), ConfigError);
  for (const char* bad : {"", "tpu", "cpu/0", "cpu/x", "cpu/", "cuda:", "cuda:1234", "cuda:x", "cpu,", "cpu/257"})
    EXPECT_THROW(DevicesSpec::parse(bad), ConfigError) << bad;
  EXPECT_NO_THROW(check_device_spec("cuda:999/256, cpu"));
}
