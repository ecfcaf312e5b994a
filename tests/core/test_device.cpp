#include <gtest/gtest.h>

#include "vecbench/core/device.hpp"

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
