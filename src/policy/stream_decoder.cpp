// Decoding a copy of a compressed response body one received piece at a time.
// Every decoder writes through a fixed scratch buffer and keeps only what fits
// under the caller's cap: a small body that inflates to gigabytes costs time,
// never memory (the usage meter, which reads all of it, takes it a scratch
// buffer at a time). The encoded bytes themselves are never touched.
#include "policy/stream_decoder.hpp"

#include "util/ascii.hpp"

// Ask zlib for const input pointers instead of casting constness away.
#define ZLIB_CONST
#include <brotli/decode.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

namespace keyshim::policy {
namespace {

constexpr std::size_t k_scratch_size = std::size_t{16} * 1024;
using Scratch = std::array<std::uint8_t, k_scratch_size>;

// RFC 9659: zstd as an HTTP content coding uses windows of at most 8 MiB.
constexpr int k_zstd_window_log_max = 23;

// Hands the first `size` bytes of the scratch buffer to the sink.
void emit(DecodedSink& sink, const Scratch& scratch, std::size_t size) {
  if (size != 0) {
    sink.take(std::string_view(reinterpret_cast<const char*>(scratch.data()), size));
  }
}

// StreamDecoder::feed's sink: keeps what fits under `max_out`, drops the rest.
class CappedAppend final : public DecodedSink {
public:
  CappedAppend(std::string& out, std::size_t max_out) : m_out(out), m_max_out(max_out) {}
  void take(std::string_view decoded) override {
    if (m_out.size() < m_max_out) {
      m_out.append(decoded.substr(0, m_max_out - m_out.size()));
    }
  }

private:
  std::string& m_out;
  std::size_t m_max_out;
};

class IdentityDecoder final : public StreamDecoder {
public:
  bool decode(std::string_view in, DecodedSink& sink) override {
    if (!in.empty()) {
      sink.take(in);
    }
    return true;
  }
};

enum class ZlibFormat { gzip, deflate };

// RFC 1950 section 2.2: compression method 8, a window of at most 32 KiB, and
// the two header bytes, read as a big-endian number, a multiple of 31.
bool looks_like_zlib_header(std::string_view head) {
  auto cmf = static_cast<unsigned char>(head[0]);
  auto flg = static_cast<unsigned char>(head[1]);
  return (cmf & 0x0F) == 8 && (cmf >> 4) <= 7 && ((cmf << 8) | flg) % 31 == 0;
}

// gzip, and deflate in both forms servers send for it: the zlib wrapper the
// standard names (RFC 1950) and the bare RFC 1951 stream some servers send
// instead. Browsers accept both, so upstreams get away with either; the two
// header bytes tell them apart, since a bare stream that happens to pass the
// zlib header check would need a stored block with non-zero padding bits.
class ZlibDecoder final : public StreamDecoder {
public:
  explicit ZlibDecoder(ZlibFormat format) : m_format(format) {}
  ~ZlibDecoder() override {
    if (m_initialized) {
      inflateEnd(&m_stream);
    }
  }
  ZlibDecoder(const ZlibDecoder&) = delete;
  ZlibDecoder& operator=(const ZlibDecoder&) = delete;

  bool decode(std::string_view in, DecodedSink& sink) override {
    if (m_failed) {
      return false;
    }
    if (!m_initialized) {
      // A deflate body's format is only known after its first two bytes,
      // which may arrive one call at a time: hold them until then.
      std::size_t wanted = m_format == ZlibFormat::deflate ? 2 : 0;
      std::size_t take = std::min(wanted - m_head.size(), in.size());
      m_head.append(in.substr(0, take));
      in.remove_prefix(take);
      if (m_head.size() < wanted) {
        return true;
      }
      if (!start() || !inflate_all(m_head, sink)) {
        return fail();
      }
    }
    return inflate_all(in, sink);
  }

private:
  bool start() {
    int window_bits = MAX_WBITS + 16; // gzip wrapper only
    if (m_format == ZlibFormat::deflate) {
      window_bits = looks_like_zlib_header(m_head) ? MAX_WBITS : -MAX_WBITS;
    }
    m_initialized = inflateInit2(&m_stream, window_bits) == Z_OK;
    return m_initialized;
  }

  // zlib counts input in uInt, so a huge piece goes in slices.
  bool inflate_all(std::string_view in, DecodedSink& sink) {
    constexpr std::size_t k_max_slice = std::numeric_limits<uInt>::max();
    while (!in.empty() && !m_done) {
      std::size_t slice = std::min(in.size(), k_max_slice);
      m_stream.next_in = reinterpret_cast<const Bytef*>(in.data());
      m_stream.avail_in = static_cast<uInt>(slice);
      if (!inflate_slice(sink)) {
        return fail();
      }
      in.remove_prefix(slice);
    }
    return true;
  }

  bool inflate_slice(DecodedSink& sink) {
    while (true) {
      m_stream.next_out = m_scratch.data();
      m_stream.avail_out = static_cast<uInt>(m_scratch.size());
      int rc = inflate(&m_stream, Z_NO_FLUSH);
      emit(sink, m_scratch, m_scratch.size() - m_stream.avail_out);
      if (rc == Z_STREAM_END) {
        m_done = true; // anything after the end is ignored
        return true;
      }
      if (rc == Z_BUF_ERROR) {
        return true; // no input left and nothing pending
      }
      if (rc != Z_OK) {
        return false; // Z_DATA_ERROR, Z_NEED_DICT, Z_MEM_ERROR
      }
      if (m_stream.avail_in == 0 && m_stream.avail_out != 0) {
        return true;
      }
    }
  }

  bool fail() {
    m_failed = true;
    return false;
  }

  ZlibFormat m_format;
  z_stream m_stream{};
  std::string m_head; // the first bytes of a deflate body, until its format is known
  bool m_initialized = false;
  bool m_done = false;
  bool m_failed = false;
  Scratch m_scratch{};
};

class BrotliDecoder final : public StreamDecoder {
public:
  bool decode(std::string_view in, DecodedSink& sink) override {
    if (!m_state || m_failed) {
      return false;
    }
    if (m_done) {
      return true;
    }
    const auto* next_in = reinterpret_cast<const std::uint8_t*>(in.data());
    std::size_t avail_in = in.size();
    while (true) {
      std::uint8_t* next_out = m_scratch.data();
      std::size_t avail_out = m_scratch.size();
      BrotliDecoderResult result =
          BrotliDecoderDecompressStream(m_state.get(), &avail_in, &next_in, &avail_out, &next_out, nullptr);
      emit(sink, m_scratch, m_scratch.size() - avail_out);
      switch (result) {
      case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
        continue;
      case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
        return true; // all input consumed
      case BROTLI_DECODER_RESULT_SUCCESS:
        m_done = true; // anything after the end is ignored
        return true;
      case BROTLI_DECODER_RESULT_ERROR:
        break;
      }
      m_failed = true;
      return false;
    }
  }

private:
  std::unique_ptr<BrotliDecoderState, decltype(&BrotliDecoderDestroyInstance)> m_state{
      BrotliDecoderCreateInstance(nullptr, nullptr, nullptr), &BrotliDecoderDestroyInstance};
  bool m_done = false;
  bool m_failed = false;
  Scratch m_scratch{};
};

class ZstdDecoder final : public StreamDecoder {
public:
  ZstdDecoder() {
    if (m_context &&
        ZSTD_isError(ZSTD_DCtx_setParameter(m_context.get(), ZSTD_d_windowLogMax, k_zstd_window_log_max))) {
      m_context.reset();
    }
  }

  bool decode(std::string_view in, DecodedSink& sink) override {
    if (!m_context || m_failed) {
      return false;
    }
    if (m_done) {
      return true;
    }
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    while (true) {
      ZSTD_outBuffer output{m_scratch.data(), m_scratch.size(), 0};
      std::size_t rc = ZSTD_decompressStream(m_context.get(), &output, &input);
      if (ZSTD_isError(rc)) {
        return end_or_fail(rc);
      }
      emit(sink, m_scratch, output.pos);
      if (rc == 0) {
        m_completed_frame = true; // a frame ended; another may follow
      }
      if (input.pos == input.size && output.pos < output.size) {
        return true;
      }
    }
  }

private:
  // A zstd body is a sequence of frames (RFC 8878), so decoding goes on past
  // the first. Bytes after the last frame fail the next frame's magic number
  // check; like bytes after the end of a gzip or brotli stream, they are ignored.
  bool end_or_fail(std::size_t rc) {
    if (m_completed_frame && ZSTD_getErrorCode(rc) == ZSTD_error_prefix_unknown) {
      m_done = true;
      return true;
    }
    m_failed = true;
    return false;
  }

  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> m_context{ZSTD_createDCtx(), &ZSTD_freeDCtx};
  bool m_completed_frame = false;
  bool m_done = false;
  bool m_failed = false;
  Scratch m_scratch{};
};

} // namespace

bool StreamDecoder::feed(std::string_view in, std::string& out, std::size_t max_out) {
  CappedAppend sink(out, max_out);
  return decode(in, sink);
}

bool is_identity(std::string_view content_encoding) {
  std::string_view name = util::trim(content_encoding);
  return name.empty() || util::iequals(name, "identity");
}

std::unique_ptr<StreamDecoder> make_decoder(std::string_view content_encoding) {
  if (is_identity(content_encoding)) {
    return std::make_unique<IdentityDecoder>();
  }
  std::string name = util::to_lower(util::trim(content_encoding));
  if (name == "gzip" || name == "x-gzip") {
    return std::make_unique<ZlibDecoder>(ZlibFormat::gzip);
  }
  if (name == "deflate") {
    return std::make_unique<ZlibDecoder>(ZlibFormat::deflate);
  }
  if (name == "br") {
    return std::make_unique<BrotliDecoder>();
  }
  if (name == "zstd") {
    return std::make_unique<ZstdDecoder>();
  }
  return nullptr;
}

} // namespace keyshim::policy
