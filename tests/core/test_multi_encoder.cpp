// Several encoders from one decode (issue #62): the composite input's layout, the composite model
// (engine/multi_encoder.hpp) against its encoders run alone, and an image file decoded once into
// every encoder's part (input/input_layout.hpp, FileSource) against a source per encoder.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <vector>

#include "vecbench/engine/multi_encoder.hpp"
#include "vecbench/input/input_layout.hpp"
#include "vecbench/strategies/strategies.hpp"
#include "vecbench/testing/stub_model.hpp"
#ifdef VECBENCH_WITH_CODEC
#include "vecbench/input/inputs.hpp"
#include "vecbench/testing/png_writer.hpp"
#include "vecbench/testing/temp_dir.hpp"
#endif

using namespace vecbench;

namespace {

InputLayout inception_and_dinov2() {
  InputLayout l;
  l.parts = {{299, ResizeMode::tf_legacy}, {224, ResizeMode::pil_bicubic_u8}};
  return l;
}

vecbench::testing::StubOptions stub(int size, int dim) {
  vecbench::testing::StubOptions o;
  o.input_size = size;
  o.feature_dim = dim;
  return o;
}

}  // namespace

TEST(MultiEncoder, TheLayoutPutsThePartsOneAfterTheOtherInTheSmallestSquare) {
  const InputLayout l = inception_and_dinov2();
  EXPECT_EQ(l.offset(0), 0u);
  EXPECT_EQ(l.offset(1), 3u * 299 * 299);
  EXPECT_EQ(l.total(), 3u * 299 * 299 + 3u * 224 * 224);
  const auto s = static_cast<std::size_t>(l.side());
  EXPECT_GE(3 * s * s, l.total());
  EXPECT_LT(3 * (s - 1) * (s - 1), l.total());
  EXPECT_EQ(s, 374u);
}

TEST(MultiEncoder, EachEncodersVectorIsTheOneItGivesAlone) {
  InputLayout l;
  l.parts = {{16, ResizeMode::tf_legacy}, {12, ResizeMode::bilinear}};
  VirtualDevice dev;
  const ModelFactory multi = multi_encoder_factory(
      {vecbench::testing::stub_factory(stub(16, 8)), vecbench::testing::stub_factory(stub(12, 5))}, l);
  auto m = multi(dev);
  ASSERT_EQ(m->feature_dim(), 13);
  ASSERT_EQ(m->input_size(), l.side());
  const int n = 3;
  const std::size_t stride = 3 * static_cast<std::size_t>(l.side()) * static_cast<std::size_t>(l.side());
  std::vector<float> in(n * stride, -1.0f), a(n * l.parts[0].floats()), b(n * l.parts[1].floats());
  for (std::size_t j = 0; j < n; ++j) {  // each image's two parts, and the same parts as batches of their own
    for (std::size_t i = 0; i < l.parts[0].floats(); ++i)
      in[j * stride + i] = a[j * l.parts[0].floats() + i] = static_cast<float>((i * 7 + j * 13) % 251);
    for (std::size_t i = 0; i < l.parts[1].floats(); ++i)
      in[j * stride + l.offset(1) + i] = b[j * l.parts[1].floats() + i] = static_cast<float>((i * 3 + j * 5) % 239);
  }
  std::vector<float> out(n * 13), oa(n * 8), ob(n * 5);
  m->forward(in.data(), n, out.data());
  vecbench::testing::StubModel(dev, stub(16, 8)).forward(a.data(), n, oa.data());
  vecbench::testing::StubModel(dev, stub(12, 5)).forward(b.data(), n, ob.data());
  for (int j = 0; j < n; ++j) {
    for (int c = 0; c < 8; ++c) EXPECT_EQ(out[j * 13 + c], oa[j * 8 + c]) << j << " " << c;
    for (int c = 0; c < 5; ++c) EXPECT_EQ(out[j * 13 + 8 + c], ob[j * 5 + c]) << j << " " << c;
  }
  // an encoder whose input size is not its part's is refused
  EXPECT_THROW(
      multi_encoder_factory(
          {vecbench::testing::stub_factory(stub(16, 8)), vecbench::testing::stub_factory(stub(16, 5))}, l)(dev),
      Error);
}

#ifdef VECBENCH_WITH_CODEC
TEST(MultiEncoder, AnImageIsDecodedOnceIntoEveryEncodersPart) {
  vecbench::testing::ScopedTempDir dir("multi_encoder");
  const auto png = vecbench::testing::png_encode(vecbench::testing::png_random_spec(2, 61, 47, 3));
  const auto file = dir.path / "a.png";
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  InputOptions opt;
  opt.layout = inception_and_dinov2();
  opt.layout.parts.push_back({32, ResizeMode::torch_bicubic_aa});
  const auto multi = make_source(file.string(), opt);
  std::vector<float> all(3 * static_cast<std::size_t>(opt.layout.side()) * opt.layout.side(), -5.0f);
  StageTimes t;
  multi->load(0, opt.layout.side(), all.data(), t);
  for (std::size_t k = 0; k < opt.layout.parts.size(); ++k) {
    InputOptions one;
    one.resize = opt.layout.parts[k].mode;
    std::vector<float> alone(opt.layout.parts[k].floats());
    make_source(file.string(), one)->load(0, opt.layout.parts[k].size, alone.data(), t);
    EXPECT_TRUE(std::equal(alone.begin(), alone.end(), all.begin() + static_cast<std::ptrdiff_t>(opt.layout.offset(k))))
        << "part " << k;
  }
  EXPECT_THROW(multi->load(0, 299, all.data(), t), Error);     // not the layout's side
  EXPECT_THROW(make_source("synthetic:4", opt), ConfigError);  // one decode needs image files
}
#endif
