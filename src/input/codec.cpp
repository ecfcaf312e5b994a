// Direct JPEG (libjpeg-turbo) and PNG (libpng 1.6) decoding with captured warnings; see codec.hpp.
//
// Matching OpenCV 4.6 (modules/imgcodecs/src/grfmt_jpeg.cpp, grfmt_png.cpp, exif.cpp, loadsave.cpp)
// for a 3-channel 8-bit read (IMREAD_COLOR):
// - JPEG: libjpeg defaults (JDCT_ISLOW, fancy upsampling; JDCT_IFAST with `fast_idct`, as TF's
//   DecodeJpeg by default), scale 1/denom, output JCS_RGB unless the
//   file has 4 components, then JCS_CMYK converted with icvCvt_CMYK2BGR_8u_C4C3R's arithmetic;
//   EXIF from the first APP1 marker saved before the first scan, its first 6 bytes skipped.
// - PNG: png_set_strip_16 (high byte, not rounding), png_set_strip_alpha, png_set_palette_to_rgb,
//   png_set_expand_gray_1_2_4_to_8, png_set_gray_to_rgb, png_set_interlace_handling (OpenCV also
//   sets png_set_bgr: a pure channel swap, which the BGR->RGB conversion undoes); EXIF from eXIf.
//
// libjpeg and libpng report fatal errors by longjmp: the functions that call setjmp (jpeg_*_phase,
// png_*_phase) hold no C++ object with a destructor, and everything they change lives behind a
// pointer, so nothing is skipped or clobbered; buffers are allocated between the phases.
#include "vecbench/input/codec.hpp"

#include "vecbench/input/png_fast.hpp"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <new>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

namespace vecbench {

namespace {

constexpr std::size_t kMaxWarnings = 8;

std::uint32_t be16(const std::uint8_t* p) { return (std::uint32_t{p[0]} << 8) | p[1]; }
std::uint32_t le16(const std::uint8_t* p) { return (std::uint32_t{p[1]} << 8) | p[0]; }
std::uint32_t be32(const std::uint8_t* p) { return (be16(p) << 16) | be16(p + 2); }
std::uint32_t le32(const std::uint8_t* p) { return (le16(p + 2) << 16) | le16(p); }
std::uint32_t le24(const std::uint8_t* p) { return (std::uint32_t{p[2]} << 16) | le16(p); }

void add_warning(DecodeResult& r, const char* msg) noexcept {
  ++r.warning_count;
  try {
    if (r.warnings.size() < kMaxWarnings && std::find(r.warnings.begin(), r.warnings.end(), msg) == r.warnings.end())
      r.warnings.emplace_back(msg);
  } catch (...) {  // out of memory while noting a warning: the count still says it
  }
}

void check_limit(std::uint64_t w, std::uint64_t h, std::uint64_t limit) {
  if (limit != 0 && w * h > limit) throw ImageTooLargeError(w, h, limit);
}

// ---- Headers ------------------------------------------------------------------------------------

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

// ---- libjpeg ------------------------------------------------------------------------------------

struct JpegErrorMgr {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  DecodeResult* result;
  bool in_header;  // reading the markers before the first scan (jpeg_read_header)
};

void jpeg_error_exit_cb(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegErrorMgr*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void jpeg_emit_message_cb(j_common_ptr cinfo, int msg_level) {
  if (msg_level >= 0) return;  // trace messages
  auto* e = reinterpret_cast<JpegErrorMgr*>(cinfo->err);
  ++e->pub.num_warnings;
  if (e->pub.msg_code == JWRN_JFIF_MAJOR) return;  // a version number in metadata
  // Junk between the segments before the first scan ("2 extraneous bytes before marker 0xe0"):
  // skipped, no pixel depends on it. After that (before RSTn, EOI, a later scan) it is data.
  if (e->pub.msg_code == JWRN_EXTRANEOUS_DATA && e->in_header) return;
  char buf[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, buf);
  add_warning(*e->result, buf);
}

void jpeg_output_message_cb(j_common_ptr) {}  // never print

struct JpegJob {
  jpeg_decompress_struct cinfo;
  JpegErrorMgr err;
  bool created = false;
  JpegJob() {
    std::memset(&cinfo, 0, sizeof cinfo);
    std::memset(&err, 0, sizeof err);
  }
  ~JpegJob() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
  JpegJob(const JpegJob&) = delete;
  JpegJob& operator=(const JpegJob&) = delete;
};

bool jpeg_header_phase(JpegJob* job, const std::uint8_t* data, std::size_t size, unsigned denom, bool fast_idct) {
  if (setjmp(job->err.jump)) return false;
  job->created = true;
  jpeg_create_decompress(&job->cinfo);
  jpeg_mem_src(&job->cinfo, data, static_cast<unsigned long>(size));
  jpeg_save_markers(&job->cinfo, JPEG_APP0 + 1, 0xFFFF);
  job->err.in_header = true;
  jpeg_read_header(&job->cinfo, TRUE);
  job->err.in_header = false;
  job->cinfo.scale_num = 1;
  job->cinfo.scale_denom = denom;
  job->cinfo.dct_method = fast_idct ? JDCT_IFAST : JDCT_ISLOW;
  // OpenCV for a 3-channel read: RGB (libjpeg replicates gray), CMYK for 4-component files.
  job->cinfo.out_color_space = job->cinfo.num_components != 4 ? JCS_RGB : JCS_CMYK;
  jpeg_calc_output_dimensions(&job->cinfo);
  return true;
}

bool jpeg_pixel_phase(JpegJob* job, std::uint8_t* out, std::uint8_t* cmyk_row) {
  if (setjmp(job->err.jump)) return false;
  j_decompress_ptr c = &job->cinfo;
  jpeg_start_decompress(c);
  const std::size_t w = c->output_width;
  if (c->output_components != (cmyk_row ? 4 : 3)) {
    std::snprintf(job->err.message, sizeof job->err.message, "unexpected output components: %d", c->output_components);
    return false;
  }
  while (c->output_scanline < c->output_height) {
    std::uint8_t* dst = out + static_cast<std::size_t>(c->output_scanline) * w * 3;
    JSAMPROW row = cmyk_row ? cmyk_row : dst;
    if (jpeg_read_scanlines(c, &row, 1) != 1) {
      std::snprintf(job->err.message, sizeof job->err.message, "decoder suspended at row %u", c->output_scanline);
      return false;
    }
    if (cmyk_row) {  // icvCvt_CMYK2BGR_8u_C4C3R, written as RGB
      for (std::size_t x = 0; x < w; ++x) {
        const int cc = cmyk_row[4 * x], m = cmyk_row[4 * x + 1], y = cmyk_row[4 * x + 2], k = cmyk_row[4 * x + 3];
        dst[3 * x] = static_cast<std::uint8_t>(k - ((255 - cc) * k >> 8));
        dst[3 * x + 1] = static_cast<std::uint8_t>(k - ((255 - m) * k >> 8));
        dst[3 * x + 2] = static_cast<std::uint8_t>(k - ((255 - y) * k >> 8));
      }
    }
  }
  jpeg_finish_decompress(c);
  return true;
}

// ---- libpng -------------------------------------------------------------------------------------

// "iCCP: known incorrect sRGB profile": a warning about an ancillary chunk (lower-case first letter).
bool ancillary_chunk_message(const char* m) {
  if (!m || std::strlen(m) < 5 || m[4] != ':') return false;
  for (int i = 0; i < 4; ++i)
    if (!((m[i] >= 'a' && m[i] <= 'z') || (m[i] >= 'A' && m[i] <= 'Z'))) return false;
  return m[0] >= 'a' && m[0] <= 'z';
}

struct PngJob {
  png_structp png = nullptr;
  png_infop info = nullptr;
  png_infop end = nullptr;
  const std::uint8_t* data = nullptr;
  std::size_t size = 0, pos = 0;
  char message[512] = {};
  DecodeResult* result = nullptr;
  PngJob() = default;
  ~PngJob() {
    if (png) png_destroy_read_struct(&png, &info, &end);
  }
  PngJob(const PngJob&) = delete;
  PngJob& operator=(const PngJob&) = delete;
};

void png_error_cb(png_structp png, png_const_charp msg) {
  auto* job = static_cast<PngJob*>(png_get_error_ptr(png));
  std::snprintf(job->message, sizeof job->message, "%s", msg ? msg : "unknown error");
  png_longjmp(png, 1);
}

void png_warning_cb(png_structp png, png_const_charp msg) {
  if (ancillary_chunk_message(msg)) return;
  auto* job = static_cast<PngJob*>(png_get_error_ptr(png));
  add_warning(*job->result, msg ? msg : "unknown warning");
}

void png_read_cb(png_structp png, png_bytep dst, png_size_t n) {
  auto* job = static_cast<PngJob*>(png_get_io_ptr(png));
  if (n > job->size - job->pos) png_error(png, "unexpected end of data (truncated file)");
  std::memcpy(dst, job->data + job->pos, n);
  job->pos += n;
}

bool png_header_phase(PngJob* job) {
  if (setjmp(png_jmpbuf(job->png))) return false;
  png_set_read_fn(job->png, job, png_read_cb);
  png_read_info(job->png, job->info);
  return true;
}

bool png_pixel_phase(PngJob* job, png_bytepp rows, std::size_t row_bytes) {
  if (setjmp(png_jmpbuf(job->png))) return false;
  png_structp p = job->png;
  const int depth = png_get_bit_depth(p, job->info), type = png_get_color_type(p, job->info);
  if (depth == 16) png_set_strip_16(p);
  png_set_strip_alpha(p);
  if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(p);
  if ((type & PNG_COLOR_MASK_COLOR) == 0 && depth < 8) png_set_expand_gray_1_2_4_to_8(p);
  if ((type & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(p);
  png_set_interlace_handling(p);
  png_read_update_info(p, job->info);
  if (png_get_rowbytes(p, job->info) != row_bytes || png_get_channels(p, job->info) != 3 ||
      png_get_bit_depth(p, job->info) != 8)
    png_error(p, "unexpected row layout after transformations");
  png_read_image(p, rows);
  png_read_end(p, job->end);
  return true;
}

std::uint8_t* output_buffer(const CodecOptions& opt, DecodeResult& r, int w, int h) {
  r.image.width = w;
  r.image.height = h;
  if (opt.allocate) {
    std::uint8_t* p = opt.allocate(w, h);
    if (!p) throw std::bad_alloc();
    return p;
  }
  r.image.pixels.resize(static_cast<std::size_t>(w) * h * 3);
  return r.image.pixels.data();
}

}  // namespace

// ---- Public -------------------------------------------------------------------------------------

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

DecodeResult decode_jpeg(const std::uint8_t* data, std::size_t size, const CodecOptions& opt) {
  DecodeResult r;
  if (!data || size == 0) throw CodecError("Empty input file");
  const int d = opt.scale_denom;
  const unsigned denom = (d == 2 || d == 4 || d == 8) ? static_cast<unsigned>(d) : 1u;
  JpegJob job;
  job.cinfo.err = jpeg_std_error(&job.err.pub);
  job.err.pub.error_exit = jpeg_error_exit_cb;
  job.err.pub.emit_message = jpeg_emit_message_cb;
  job.err.pub.output_message = jpeg_output_message_cb;
  job.err.result = &r;
  if (!jpeg_header_phase(&job, data, size, denom, opt.fast_idct)) throw CodecError(job.err.message);
  const JDIMENSION w = job.cinfo.output_width, h = job.cinfo.output_height;
  check_limit(w, h, opt.max_pixels);
  for (jpeg_saved_marker_ptr m = job.cinfo.marker_list; m; m = m->next)
    if (m->marker == JPEG_APP0 + 1) {  // OpenCV 4.6 reads the first APP1, whatever its name
      if (m->data_length > 6) r.exif_orientation = exif_orientation(m->data + 6, m->data_length - 6);
      break;
    }
  std::uint8_t* out = output_buffer(opt, r, static_cast<int>(w), static_cast<int>(h));
  std::vector<std::uint8_t> cmyk;
  if (job.cinfo.out_color_space == JCS_CMYK) cmyk.resize(static_cast<std::size_t>(w) * 4);
  if (!jpeg_pixel_phase(&job, out, cmyk.empty() ? nullptr : cmyk.data())) throw CodecError(job.err.message);
  return r;
}

DecodeResult decode_png(const std::uint8_t* data, std::size_t size, const CodecOptions& opt) {
  DecodeResult r;
  png_fast::Layout fast;
  if (opt.png_libdeflate && png_fast::parse(data, size, fast)) {
    check_limit(fast.width, fast.height, opt.max_pixels);
    r.png_libdeflate = png_fast::decode_rgb(fast, [&](int w, int h) { return output_buffer(opt, r, w, h); });
    if (r.png_libdeflate) return r;
  }
  PngJob job;
  job.data = data;
  job.size = data ? size : 0;
  job.result = &r;
  job.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &job, png_error_cb, png_warning_cb);
  if (!job.png) throw CodecError("cannot create the PNG decoder (out of memory)");
  job.info = png_create_info_struct(job.png);
  job.end = png_create_info_struct(job.png);
  if (!job.info || !job.end) throw CodecError("cannot create the PNG decoder (out of memory)");
  if (!png_header_phase(&job)) throw CodecError(job.message);
  const png_uint_32 w = png_get_image_width(job.png, job.info), h = png_get_image_height(job.png, job.info);
  check_limit(w, h, opt.max_pixels);
  std::uint8_t* out = output_buffer(opt, r, static_cast<int>(w), static_cast<int>(h));
  const std::size_t row_bytes = static_cast<std::size_t>(w) * 3;
  std::vector<png_bytep> rows(h);
  for (png_uint_32 y = 0; y < h; ++y) rows[y] = out + y * row_bytes;
  if (!png_pixel_phase(&job, rows.data(), row_bytes)) throw CodecError(job.message);
  png_uint_32 exif_size = 0;
  png_bytep exif = nullptr;
  if (png_get_valid(job.png, job.info, PNG_INFO_eXIf))  // OpenCV 4.6: before the image, else after it
    png_get_eXIf_1(job.png, job.info, &exif_size, &exif);
  else if (png_get_valid(job.png, job.end, PNG_INFO_eXIf))
    png_get_eXIf_1(job.png, job.end, &exif_size, &exif);
  if (exif && exif_size > 0) r.exif_orientation = exif_orientation(exif, exif_size);
  return r;
}

}  // namespace vecbench
