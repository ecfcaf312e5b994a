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
