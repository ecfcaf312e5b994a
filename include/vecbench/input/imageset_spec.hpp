// Where a set of images comes from: the "images" object of an experiment file, also what
// imageset.hpp generates from (kept here so that the input layer needs no experiment header).
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "vecbench/core/base/enum_names.hpp"

namespace vecbench {

/// The file formats a generated image set is written in (their file extensions).
enum class ImageFileFormat { jpg, png, bmp, webp, tiff };
template <>
struct EnumNames<ImageFileFormat> {
  static constexpr const char* what = "format";
  static constexpr std::array<std::pair<ImageFileFormat, const char*>, 5> names = {{{ImageFileFormat::jpg, "jpg"},
                                                                                    {ImageFileFormat::png, "png"},
                                                                                    {ImageFileFormat::bmp, "bmp"},
                                                                                    {ImageFileFormat::webp, "webp"},
                                                                                    {ImageFileFormat::tiff, "tiff"}}};
};

/// Where an experiment's images come from (exactly one of the fields is set).
struct ImageSetSpec {
  std::string dir;            ///< "dir": a directory of images
  std::string list;           ///< "list": a list file, one path per line
  std::string predecoded;     ///< "predecoded": a uint8 [N,S,S,3] .npy
  std::size_t synthetic = 0;  ///< "synthetic": N generated-on-the-fly images (no decoding)
  /// "generate": {count, seed, sizes [[w,h],...], formats ["jpg","png",...], from DIR}: a set
  /// made deterministically from real photos by crop, scale and re-encode (cached on disk).
  struct Generate {
    std::size_t count = 0;
    unsigned seed = 0;
    std::vector<std::pair<int, int>> sizes;  ///< (width, height); default: ImageNet-like sizes
    std::vector<ImageFileFormat> formats = {ImageFileFormat::jpg};
    std::string from = "/usr/share/doc/opencv-doc/examples/data";
    int jpeg_quality = 90;
  } generate;
};

}  // namespace vecbench
