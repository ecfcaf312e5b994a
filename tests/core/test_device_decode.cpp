// Device JPEG decoding (`--decode gpu`) without a GPU: the routing of JPEG bytes from load_batch
// to the replica, the host fallback for files the device decoder rejects, the failed files, the
// counts, and the --decode setting and its resolution, with a stub device decoder whose "device
// memory" is host memory.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>

#include "vecbench/input/jpeg_decoder.hpp"
#include "vecbench/output/fingerprint.hpp"
#include "vecbench/strategies/runner.hpp"
#include "vecbench/testing/encoded_source.hpp"
#include "vecbench/testing/stub_model.hpp"
#include "vecbench/testing/stub_reference.hpp"

using namespace vecbench;
using vecbench::testing::encoded_index;
using vecbench::testing::EncodedSource;
using vecbench::testing::StubModel;
using vecbench::testing::StubOptions;

namespace {

// Decodes the stub bytes back into the synthetic image (so device and host give the same
// pixels); rejects inputs whose index is in `reject`.
class StubDeviceDecoder : public DeviceJpegDecoder {
 public:
  StubDeviceDecoder(const SyntheticSource& src, int size, std::set<std::size_t> reject)
      : src_(src), size_(size), reject_(std::move(reject)) {}
  std::vector<bool> decode_resize(const std::vector<EncodedView>& images, const std::vector<int>& slots,
                                  float* device_batch) override {
    std::vector<bool> ok;
    const std::size_t per = 3u * static_cast<std::size_t>(size_) * static_cast<std::size_t>(size_);
    for (std::size_t k = 0; k < images.size(); ++k) {
      const std::size_t idx = images[k].data[0] | (static_cast<std::size_t>(images[k].data[1]) << 8);
      if (reject_.count(idx)) {
        ok.push_back(false);
        continue;
      }
      StageTimes t;
      src_.SyntheticSource::load(idx, size_, device_batch + static_cast<std::size_t>(slots[k]) * per, t);
      ok.push_back(true);
      ++decoded;
    }
    return ok;
  }
  std::string backend() const override { return "stub"; }
  int decoded = 0;

 private:
  const SyntheticSource& src_;
  int size_;
  std::set<std::size_t> reject_;
};

// What each replica was asked to do, in order: "prepare", "warmup" (the model's plain warm-up),
// "encoded:I,J,..." (a forward with device decoding; the encoded inputs' indices), "forward".
struct CallLog {
  std::mutex m;
  std::map<int, std::vector<std::string>> by_device;
  void add(int device, std::string what) {
    std::lock_guard<std::mutex> lk(m);
    by_device[device].push_back(std::move(what));
  }
};

// A stub replica that, like the CUDA engine, decodes encoded slots with a device decoder
// (here the stub) and the rest of the batch as given.
class DecodingStub : public StubModel {
 public:
  DecodingStub(const VirtualDevice& d, StubOptions o, const SyntheticSource& src, std::set<std::size_t> reject,
               CallLog* log = nullptr)
      : StubModel(d, o), decoder_(src, o.input_size, std::move(reject)), log_(log), device_(d.virtual_index) {}
  void prepare(int max_batch) override {
    if (log_) log_->add(device_, "prepare");
    StubModel::prepare(max_batch);
  }
  void warmup(int, int) override {
    if (log_) log_->add(device_, "warmup");
  }
  ForwardTiming forward(const float* in, int n, float* out) override {
    if (log_ && !in_encoded_) log_->add(device_, "forward");
    return StubModel::forward(in, n, out);
  }
  ForwardTiming forward_encoded(float* input, const EncodedImages& enc, int n, float* output,
                                DeviceDecodeCounts& counts) override {
    if (log_) {
      std::string what = "encoded:";
      for (std::size_t k = 0; k < enc.bytes.size(); ++k)
        what += (k ? "," : "") + std::to_string(encoded_index(enc.bytes[k]));
      log_->add(device_, what);
    }
    struct Inside {  // forward() below is part of this call, not a plain one
      bool& flag;
      explicit Inside(bool& f) : flag(f) { flag = true; }
      ~Inside() { flag = false; }
    } inside(in_encoded_);
    std::vector<float> scratch;
    counts = decode_on_device(
        decoder_, enc, input_size(), input, scratch,
        [](const float* host, float* dst, std::size_t floats) { std::copy(host, host + floats, dst); });
    return forward(input, n, output);
  }

 private:
  StubDeviceDecoder decoder_;
  CallLog* log_;
  int device_;
  bool in_encoded_ = false;
};

std::vector<VirtualDevice> cpu_devs(const std::string& spec) {
  DeviceOptions o;
  o.cpu_cores = 4;
  return expand_devices(spec, o);
}

RunSettings decode_settings(int batch) {
  RunSettings s;
  s.batch_size = batch;
  s.prefetch_batches = 2;
  s.decode_threads = 2;
  s.warmup_batches = 0;
  return s;
}

}  // namespace

TEST(DeviceDecode, RejectedFilesFallBackToTheHostIntoTheirSlotsAndAreCounted) {
  StubOptions o;
  SyntheticSource ref(8);
  EncodedSource src(8, {6});
  StubDeviceDecoder dec(ref, o.input_size, {2, 6});
  EncodedImages enc;
  const std::size_t per = 3u * o.input_size * o.input_size;
  for (int slot = 0; slot < 4; ++slot) {  // inputs 0, 2, 4, 6 in slots 0..3
    enc.slot.push_back(slot);
    enc.bytes.push_back({static_cast<std::uint8_t>(2 * slot), 0});
  }
  enc.cpu_fallback = [&](int slot, float* dst) {
    StageTimes t;
    src.load(static_cast<std::size_t>(2 * slot), o.input_size, dst, t);
  };
  std::vector<float> device(4 * per, -1.0f), scratch;
  int uploads = 0;
  const auto c =
      decode_on_device(dec, enc, o.input_size, device.data(), scratch, [&](const float* h, float* d, std::size_t n) {
        ++uploads;
        std::copy(h, h + n, d);
      });
  EXPECT_EQ(c.on_device, 2u);     // inputs 0 and 4
  EXPECT_EQ(c.cpu_fallback, 1u);  // input 2: rejected, decoded on the host, uploaded
  EXPECT_EQ(uploads, 1);
  ASSERT_EQ(c.failed.size(), 1u);  // input 6: rejected, and the host decoder fails too
  EXPECT_EQ(c.failed[0].first, 3);
  EXPECT_NE(c.failed[0].second.find("synthetic:6"), std::string::npos);
  EXPECT_NE(c.failed[0].second.find("corrupt JPEG"), std::string::npos);
  std::vector<float> want(per);
  for (int slot = 0; slot < 3; ++slot) {
    StageTimes t;
    ref.load(static_cast<std::size_t>(2 * slot), o.input_size, want.data(), t);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), device.begin() + slot * static_cast<std::ptrdiff_t>(per)))
        << "slot " << slot;
  }
  EXPECT_EQ(device[3 * per], -1.0f);  // the failed slot is left as it was
}

TEST(DeviceDecode, ADecoderReturningTheWrongCountIsADeviceError) {
  class Short : public DeviceJpegDecoder {
    std::vector<bool> decode_resize(const std::vector<EncodedView>&, const std::vector<int>&, float*) override {
      return {};
    }
    std::string backend() const override { return "short"; }
  } dec;
  EncodedImages enc;
  enc.slot = {0};
  enc.bytes = {{1}};
  std::vector<float> d(3 * 4 * 4), s;
  EXPECT_THROW(decode_on_device(dec, enc, 4, d.data(), s, [](const float*, float*, std::size_t) {}), Error);
}

// The whole route through a strategy: even inputs travel as bytes to the replicas, which decode
// them (input 4 rejected: host fallback; input 10 rejected and fails on the host too); features equal a host-decoded
// run's, every input is delivered once, input 10 is reported failed, and the counts add up.
TEST(DeviceDecode, EveryStrategyDeliversTheSameFeaturesAsHostDecoding) {
  StubOptions o;
  SyntheticSource ref(13);
  for (const std::string strategy : {"sequential", "naive", "sharded", "data-parallel", "mirrored"}) {
    EncodedSource src(13, {10});
    const auto want = vecbench::testing::stub_reference(ref, o);
    MemorySink got(13);
    auto factory = [&](const VirtualDevice& d) -> std::unique_ptr<Model> {
      return std::make_unique<DecodingStub>(d, o, ref, std::set<std::size_t>{4, 10});
    };
    const RunStats st = run_strategy(strategy, src, all_indices(src.size()), cpu_devs("cpu/2"), factory, got,
                                     decode_settings(3), o.input_size);
    for (std::size_t i = 0; i < 13; ++i) {
      EXPECT_EQ(got.times_seen(i), 1) << strategy << " input " << i;
      if (i == 10) {
        EXPECT_NE(got.error(i).find("corrupt JPEG"), std::string::npos) << strategy;
        continue;
      }
      EXPECT_EQ(got.features(i), want->features(i)) << strategy << " input " << i;
    }
    EXPECT_EQ(st.images_ok, 12u) << strategy;
    EXPECT_EQ(st.images_failed, 1u) << strategy;
    EXPECT_EQ(st.device_decoded, 5u) << strategy;           // 0 2 6 8 12
    EXPECT_EQ(st.device_decode_fallbacks, 1u) << strategy;  // 4
  }
}

// A host replica given encoded slots (a mixed cpu,cuda run) decodes them on the host.
TEST(DeviceDecode, AHostReplicaDecodesEncodedSlotsOnTheHost) {
  StubOptions o;
  SyntheticSource ref(6);
  EncodedSource src(6);
  const auto want = vecbench::testing::stub_reference(ref, o);
  MemorySink got(6);
  const RunStats st = run_strategy("data-parallel", src, all_indices(6), cpu_devs("cpu/2"),
                                   vecbench::testing::stub_factory(o), got, decode_settings(2), o.input_size);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(got.features(i), want->features(i)) << i;
  EXPECT_EQ(st.device_decoded, 0u);
  EXPECT_EQ(st.device_decode_fallbacks, 3u);
}

TEST(DecodeSetting, ParsesAndResolvesAgainstTheDevices) {
  EXPECT_TRUE(parse_decode("auto").automatic);
  EXPECT_EQ(parse_decode("cpu").where, DecodeWhere::cpu);
  EXPECT_EQ(parse_decode("exact").jpeg, JpegDecoder::exact);
  EXPECT_EQ(parse_decode("tf").jpeg, JpegDecoder::tf);
  EXPECT_EQ(parse_decode("gpu").where, DecodeWhere::gpu);
  EXPECT_THROW(parse_decode("nvjpeg"), ConfigError);
  // auto: gpu only where every device is CUDA and nvJPEG is built in
  EXPECT_EQ(resolve_decode(parse_decode("auto"), true, true, "cuda:0/3"), DecodeWhere::gpu);
  EXPECT_EQ(resolve_decode(parse_decode("auto"), false, true, "cpu,cuda:0"), DecodeWhere::cpu);
  EXPECT_EQ(resolve_decode(parse_decode("auto"), true, false, "cuda:0"), DecodeWhere::cpu);
  EXPECT_EQ(resolve_decode(parse_decode("tf"), true, true, "cuda:0"), DecodeWhere::cpu);
  // pil-bicubic (clean-fid's resize) is the host's only: auto decodes there, gpu is refused
  EXPECT_EQ(resolve_decode(parse_decode("auto"), true, true, "cuda:0", false), DecodeWhere::cpu);
  EXPECT_THROW(resolve_decode(parse_decode("gpu"), true, true, "cuda:0", false), ConfigError);
  // gpu where it cannot run: a clear error naming the cause
  try {
    resolve_decode(parse_decode("gpu"), false, true, "cpu/2");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cpu/2"), std::string::npos) << e.what();
  }
  try {
    resolve_decode(parse_decode("gpu"), true, false, "cuda:0");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("nvJPEG"), std::string::npos) << e.what();
  }
  EXPECT_STREQ(decode_name(DecodeWhere::gpu, JpegDecoder::exact), "gpu");
  EXPECT_STREQ(decode_name(DecodeWhere::cpu, JpegDecoder::tf), "tf");
  EXPECT_STREQ(decode_name(DecodeWhere::cpu, JpegDecoder::exact), "cpu");
}

// nvJPEG's pixels are not libjpeg's: an output folder written with GPU decoding has its own
// fingerprint, so it is never resumed or mixed with host-decoded vectors; exact keeps the old one.
TEST(DecodeSetting, GpuDecodingHasItsOwnFingerprint) {
  FingerprintFields f;
  f.model_sha256 = "ab";
  f.model_arch = "inception_v3";
  f.resize = "tf-legacy";
  f.exif = "ignore";
  f.arithmetic = "fp32";
  const auto host = make_fingerprint(f);
  f.decode_where = DecodeWhere::gpu;
  const auto gpu = make_fingerprint(f);
  EXPECT_NE(host.id(), gpu.id());
  EXPECT_EQ(gpu.fields.value("decode", std::string()), "gpu");
  EXPECT_FALSE(host.fields.contains("decode"));
}

// Which nvJPEG statuses reject a file (decoded on the host instead, counted as fallbacks) and
// which throw: INVALID_PARAMETER is nvJPEG's answer to a wrong call, so it must throw rather
// than hide as host fallbacks. The values are nvjpeg.h's (nvjpegStatus_t, CUDA 11-13). Without
// nvJPEG no status is a file's fault (there is no device decoder to reject one).
TEST(DeviceDecode, NvjpegStatusesThatAreTheFilesFault) {
  enum : int {
    success = 0,
    not_initialized,
    invalid_parameter,
    bad_jpeg,
    jpeg_not_supported,
    allocator_failure,
    execution_failed,
    arch_mismatch,
    internal_error,
    implementation_not_supported,
    incomplete_bitstream
  };
  if (!nvjpeg_available()) {
    EXPECT_FALSE(nvjpeg_status_is_file_fault(bad_jpeg));
    return;
  }
  for (int s : {bad_jpeg, jpeg_not_supported, incomplete_bitstream, implementation_not_supported})
    EXPECT_TRUE(nvjpeg_status_is_file_fault(s)) << s;
  for (int s : {success, not_initialized, invalid_parameter, allocator_failure, execution_failed, arch_mismatch,
                internal_error})
    EXPECT_FALSE(nvjpeg_status_is_file_fault(s)) << s;
}

// The warm-up batch of a device-decoding run: the run's first inputs as the run loads them, JPEGs
// still as bytes; none for a source that hands over no JPEG (or whose first batch has none).
TEST(DeviceDecode, TheWarmupBatchIsTheRunsFirstInputsWithTheirJpegBytes) {
  StubOptions o;
  EncodedSource src(9, {2});
  const std::vector<std::size_t> todo{4, 2, 5, 6, 7, 8};
  const auto w = decode_warmup_batch(src, todo, 4, o.input_size);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->indices, (std::vector<std::size_t>{4, 2, 5, 6}));  // input 2 is handed over as bytes: it loads
  ASSERT_EQ(w->encoded.slot, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(w->encoded.bytes[2][0], 6);
  EXPECT_EQ(w->input.size(), 4u * 3 * o.input_size * o.input_size);
  SyntheticSource plain(9);
  EXPECT_EQ(decode_warmup_batch(plain, todo, 4, o.input_size), nullptr);     // host decoding: no such batch
  EXPECT_EQ(decode_warmup_batch(src, {1, 3, 5}, 4, o.input_size), nullptr);  // no JPEG among them
  EXPECT_EQ(decode_warmup_batch(src, {}, 4, o.input_size), nullptr);
  EXPECT_EQ(decode_warmup_batch(src, todo, 100, o.input_size)->n(), 6);  // a short run: all of it
}

// Under `--decode gpu` each replica's warm-up decodes the run's first batch through its device
// decoder (where the CUDA engine makes and sizes its nvJPEG decoder), warmup_batches times,
// before the clock; the plain warm-up on constant tensors is not run, nothing of the warm-up is
// delivered or counted, and a host-decoding run warms up as before.
TEST(DeviceDecode, EachReplicaWarmsItsDecoderUpOnTheRunsFirstBatchBeforeTheClock) {
  StubOptions o;
  SyntheticSource ref(13);
  for (const std::string strategy : {"sequential", "naive", "sharded", "data-parallel", "mirrored"}) {
    EncodedSource src(13, {10});
    CallLog log;
    auto factory = [&](const VirtualDevice& d) -> std::unique_ptr<Model> {
      return std::make_unique<DecodingStub>(d, o, ref, std::set<std::size_t>{4, 10}, &log);
    };
    RunSettings s = decode_settings(3);
    s.warmup_batches = 2;
    MemorySink got(13);
    const RunStats st = run_strategy(strategy, src, all_indices(13), cpu_devs("cpu/2"), factory, got, s, o.input_size);
    for (std::size_t i = 0; i < 13; ++i) EXPECT_EQ(got.times_seen(i), 1) << strategy << " input " << i;
    EXPECT_EQ(st.device_decoded, 5u) << strategy;  // the run's own: 0 2 6 8 12
    EXPECT_EQ(st.device_decode_fallbacks, 1u) << strategy;
    const std::size_t replicas = strategy == "sequential" ? 1 : 2;
    ASSERT_EQ(log.by_device.size(), replicas) << strategy;
    for (const auto& [dev, calls] : log.by_device) {
      ASSERT_GE(calls.size(), 3u) << strategy << " device " << dev;
      EXPECT_EQ(calls[0], "prepare") << strategy;
      EXPECT_EQ(calls[1], "encoded:0,2") << strategy;  // inputs 0..2 (1 is no JPEG), the run's first batch
      EXPECT_EQ(calls[2], "encoded:0,2") << strategy;
      for (std::size_t k = 3; k < calls.size(); ++k) EXPECT_NE(calls[k], "warmup") << strategy;
    }
  }
  // host decoding: the model's own warm-up
  CallLog log;
  auto factory = [&](const VirtualDevice& d) -> std::unique_ptr<Model> {
    return std::make_unique<DecodingStub>(d, o, ref, std::set<std::size_t>{}, &log);
  };
  RunSettings s = decode_settings(3);
  s.warmup_batches = 2;
  MemorySink got(13);
  run_strategy("sequential", ref, all_indices(13), cpu_devs("cpu"), factory, got, s, o.input_size);
  ASSERT_GE(log.by_device[0].size(), 2u);
  EXPECT_EQ(log.by_device[0][0], "prepare");
  EXPECT_EQ(log.by_device[0][1], "warmup");
}
