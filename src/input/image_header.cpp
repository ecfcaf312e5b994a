// Image headers (size and format before decoding, for the decompression-bomb limit) and EXIF
// orientation, as OpenCV 4.6 reads them (exif.cpp); see codec.hpp. No libjpeg or libpng here.
#include <cstring>
#include <vector>

#include "vecbench/input/codec.hpp"

namespace vecbench {

namespace {

std::uint32_t be16(const std::uint8_t* p) { return (std::uint32_t{p[0]} << 8) | p[1]; }
std::uint32_t le16(const std::uint8_t* p) { return (std::uint32_t{p[1]} << 8) | p[0]; }
std::uint32_t be32(const std::uint8_t* p) { return (be16(p) << 16) | be16(p + 2); }
std::uint32_t le32(const std::uint8_t* p) { return (le16(p + 2) << 16) | le16(p); }
std::uint32_t le24(const std::uint8_t* p) { return (std::uint32_t{p[2]} << 16) | le16(p); }

bool jpeg_header(const std::uint8_t* d, std::size_t n, ImageHeader& h) {
  std::size_t i = 2;
  while (i + 4 <= n) {
    if (d[i] != 0xFF) return false;
    const std::uint8_t m = d[i + 1];
    if (m == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD8)) {  // markers without a length
      i += 2;
      continue;
    }
    if (m == 0xD9 || m == 0xDA) return false;  // end of image or start of scan before any SOF
    const std::size_t len = be16(d + i + 2);
    if (len < 2) return false;
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
      if (i + 9 > n) return false;
      h.format = ImageFormat::jpeg;
      h.height = be16(d + i + 5);
      h.width = be16(d + i + 7);
      return h.width > 0 && h.height > 0;
    }
    i += 2 + len;
  }
  return false;
}

bool tiff_header(const std::uint8_t* d, std::size_t n, ImageHeader& h) {
  const bool le = d[0] == 'I';
  auto u16 = [&](std::size_t o) { return le ? le16(d + o) : be16(d + o); };
  auto u32 = [&](std::size_t o) { return le ? le32(d + o) : be32(d + o); };
  if (n < 8) return false;
  const std::size_t ifd = u32(4);
  if (ifd + 2 > n || ifd < 8) return false;
  const std::size_t count = u16(ifd);
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t e = ifd + 2 + 12 * k;
    if (e + 12 > n) break;
    const std::uint32_t tag = u16(e), type = u16(e + 2);
    if (tag != 256 && tag != 257) continue;
    const std::uint64_t v = type == 3 ? u16(e + 8) : type == 4 ? u32(e + 8) : 0;
    (tag == 256 ? h.width : h.height) = v;
  }
  h.format = ImageFormat::tiff;
  return h.width > 0 && h.height > 0;
}

bool pnm_header(const std::uint8_t* d, std::size_t n, ImageHeader& h) {
  std::size_t i = 2;
  std::uint64_t v[2] = {0, 0};
  for (auto& x : v) {
    for (;;) {  // whitespace and comments
      while (i < n && (d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n' || d[i] == '\v' || d[i] == '\f'))
        ++i;
      if (i < n && d[i] == '#') {
        while (i < n && d[i] != '\n' && d[i] != '\r') ++i;
        continue;
      }
      break;
    }
    if (i >= n || d[i] < '0' || d[i] > '9') return false;
    while (i < n && d[i] >= '0' && d[i] <= '9') {
      x = x * 10 + static_cast<std::uint64_t>(d[i++] - '0');
      if (x > 0xFFFFFFFFu) return false;  // not a size OpenCV reads; keeps width * height in 64 bits
    }
  }
  h.format = ImageFormat::pnm;
  h.width = v[0];
  h.height = v[1];
  return h.width > 0 && h.height > 0;
}

bool webp_header(const std::uint8_t* d, std::size_t n, ImageHeader& h) {
  if (n < 30) return false;
  h.format = ImageFormat::webp;
  if (std::memcmp(d + 12, "VP8 ", 4) == 0) {
    if (d[23] != 0x9D || d[24] != 0x01 || d[25] != 0x2A) return false;
    h.width = le16(d + 26) & 0x3FFF;
    h.height = le16(d + 28) & 0x3FFF;
  } else if (std::memcmp(d + 12, "VP8L", 4) == 0) {
    if (d[20] != 0x2F) return false;
    const std::uint32_t bits = le32(d + 21);
    h.width = (bits & 0x3FFF) + 1;
    h.height = ((bits >> 14) & 0x3FFF) + 1;
  } else if (std::memcmp(d + 12, "VP8X", 4) == 0) {
    h.width = std::uint64_t{le24(d + 24)} + 1;
    h.height = std::uint64_t{le24(d + 27)} + 1;
  } else {
    return false;
  }
  return h.width > 0 && h.height > 0;
}

bool bmp_header(const std::uint8_t* d, std::size_t n, ImageHeader& h) {
  if (n < 26) return false;
  const std::uint32_t dib = le32(d + 14);
  std::int64_t w, ht;
  if (dib == 12) {
    w = le16(d + 18);
    ht = le16(d + 20);
  } else if (dib >= 16) {
    w = static_cast<std::int32_t>(le32(d + 18));
    ht = static_cast<std::int32_t>(le32(d + 22));
  } else {
    return false;
  }
  if (w <= 0 || ht == 0) return false;
  h.format = ImageFormat::bmp;
  h.width = static_cast<std::uint64_t>(w);
  h.height = static_cast<std::uint64_t>(ht < 0 ? -ht : ht);
  return true;
}

}  // namespace

bool read_image_header(const std::uint8_t* d, std::size_t n, ImageHeader& h) {
  h = ImageHeader{};
  if (!d) return false;
  auto starts = [&](const char* m, std::size_t k) { return n >= k && std::memcmp(d, m, k) == 0; };
  if (starts("\xFF\xD8\xFF", 3)) return jpeg_header(d, n, h);
  if (starts("\x89PNG\r\n\x1a\n", 8)) {
    if (n < 24 || std::memcmp(d + 12, "IHDR", 4) != 0) return false;
    h.format = ImageFormat::png;
    h.width = be32(d + 16);
    h.height = be32(d + 20);
    return h.width > 0 && h.height > 0;
  }
  if (starts("BM", 2)) return bmp_header(d, n, h);
  if (starts("II*\0", 4) || starts("MM\0*", 4)) return tiff_header(d, n, h);
  if (n >= 12 && starts("RIFF", 4) && std::memcmp(d + 8, "WEBP", 4) == 0) return webp_header(d, n, h);
  if (starts("GIF87a", 6) || starts("GIF89a", 6)) {
    if (n < 10) return false;
    h.format = ImageFormat::gif;
    h.width = le16(d + 6);
    h.height = le16(d + 8);
    return h.width > 0 && h.height > 0;
  }
  if (n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6') return pnm_header(d, n, h);
  return false;
}

int exif_orientation(const std::uint8_t* d, std::size_t n) {
  // OpenCV 4.6 ExifReader: "II" is little-endian, anything else is read big-endian; every read
  // past the end throws, which stops the parse and keeps what was found before.
  if (!d || n == 0) return 0;
  const bool le = d[0] == 'I' && (n == 1 || d[1] == 'I');
  auto u16 = [&](std::uint64_t o, std::uint32_t& v) {
    if (o + 1 >= n) return false;
    v = le ? le16(d + o) : be16(d + o);
    return true;
  };
  auto u32 = [&](std::uint64_t o, std::uint32_t& v) {
    if (o + 3 >= n) return false;
    v = le ? le32(d + o) : be32(d + o);
    return true;
  };
  auto rationals = [&](std::uint64_t entry, int count) {  // getURational at the value offset
    std::uint32_t off, v;
    if (!u32(entry + 8, off)) return false;
    for (int i = 0; i < count; ++i)
      if (!u32(std::uint64_t{off} + 8 * i, v) || !u32(std::uint64_t{off} + 8 * i + 4, v)) return false;
    return true;
  };
  std::uint32_t mark, start, entries;
  if (!u16(2, mark) || mark != 0x2A || !u32(4, start) || !u16(start, entries)) return 0;
  std::uint64_t off = std::uint64_t{start} + 2;
  for (std::uint32_t e = 0; e < entries; ++e, off += 12) {
    std::uint32_t tag, v;
    if (!u16(off, tag)) return 0;
    switch (tag) {
      case 0x0112:  // Orientation: a 16-bit read at the value field, whatever the type
        return u16(off + 8, v) ? static_cast<int>(v) : 0;
      case 0x010E:  // strings: ImageDescription, Make, Model, Software, DateTime, Copyright
      case 0x010F:
      case 0x0110:
      case 0x0131:
      case 0x0132:
      case 0x8298: {
        std::uint32_t count, data_off = 4;
        if (!u32(off + 4, count)) return 0;
        if (count > 4 && !u32(off + 8, data_off)) return 0;
        if (data_off > n || std::uint64_t{data_off} + count > n) return 0;
        break;
      }
      case 0x011A:  // XResolution, YResolution
      case 0x011B:
        if (!rationals(off, 1)) return 0;
        break;
      case 0x013E:  // WhitePoint
        if (!rationals(off, 2)) return 0;
        break;
      case 0x0211:  // YCbCrCoefficients
        if (!rationals(off, 3)) return 0;
        break;
      case 0x013F:  // PrimaryChromaticities, ReferenceBlackWhite
      case 0x0214:
        if (!rationals(off, 6)) return 0;
        break;
      case 0x0128:  // ResolutionUnit, YCbCrPositioning
      case 0x0213:
        if (!u16(off + 8, v)) return 0;
        break;
      default:
        break;
    }
  }
  return 0;
}

void apply_exif_orientation(RgbImage& img, int orientation) {
  if (orientation < 2 || orientation > 8) return;
  const int W = img.width, H = img.height;
  const bool swap = orientation >= 5;
  const int ow = swap ? H : W, oh = swap ? W : H;
  std::vector<std::uint8_t> out(img.pixels.size());
  for (int oy = 0; oy < oh; ++oy)
    for (int ox = 0; ox < ow; ++ox) {
      int sy = oy, sx = ox;
      switch (orientation) {
        case 2:
          sx = W - 1 - ox;
          break;
        case 3:
          sy = H - 1 - oy, sx = W - 1 - ox;
          break;
        case 4:
          sy = H - 1 - oy;
          break;
        case 5:
          sy = ox, sx = oy;
          break;
        case 6:
          sy = H - 1 - ox, sx = oy;
          break;
        case 7:
          sy = H - 1 - ox, sx = W - 1 - oy;
          break;
        case 8:
          sy = ox, sx = W - 1 - oy;
          break;
      }
      std::memcpy(&out[(static_cast<std::size_t>(oy) * ow + ox) * 3],
                  &img.pixels[(static_cast<std::size_t>(sy) * W + sx) * 3], 3);
    }
  img.pixels.swap(out);
  img.width = ow;
  img.height = oh;
}

}  // namespace vecbench
