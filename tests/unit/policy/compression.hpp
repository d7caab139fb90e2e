#pragma once
// Compressing test bodies the way streaming servers do, for the decoder and
// usage meter tests.
#define ZLIB_CONST
#include <brotli/encode.h>
#include <zlib.h>
#include <zstd.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::test {

enum class Codec { gzip, zlib_deflate, raw_deflate, brotli, zstd };

// Each piece compressed and flushed so that it decodes before the next exists,
// the last one finishing the stream. Returns the compressed bytes per piece.
inline std::vector<std::string> zlib_pieces(int window_bits, const std::vector<std::string>& pieces) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::vector<std::string> encoded;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    int flush = i + 1 == pieces.size() ? Z_FINISH : Z_SYNC_FLUSH;
    stream.next_in = reinterpret_cast<const Bytef*>(pieces[i].data());
    stream.avail_in = static_cast<uInt>(pieces[i].size());
    std::string chunk;
    std::array<Bytef, 4096> buffer{};
    do {
      stream.next_out = buffer.data();
      stream.avail_out = static_cast<uInt>(buffer.size());
      deflate(&stream, flush);
      chunk.append(reinterpret_cast<const char*>(buffer.data()), buffer.size() - stream.avail_out);
    } while (stream.avail_out == 0);
    encoded.push_back(chunk);
  }
  deflateEnd(&stream);
  return encoded;
}

inline std::vector<std::string> brotli_pieces(const std::vector<std::string>& pieces) {
  BrotliEncoderState* state = BrotliEncoderCreateInstance(nullptr, nullptr, nullptr);
  BrotliEncoderSetParameter(state, BROTLI_PARAM_QUALITY, 5); // the default 11 is slow under sanitizers
  std::vector<std::string> encoded;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    auto op = i + 1 == pieces.size() ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_FLUSH;
    const auto* next_in = reinterpret_cast<const std::uint8_t*>(pieces[i].data());
    std::size_t avail_in = pieces[i].size();
    std::string chunk;
    while (true) {
      std::array<std::uint8_t, 4096> buffer{};
      std::uint8_t* next_out = buffer.data();
      std::size_t avail_out = buffer.size();
      BrotliEncoderCompressStream(state, op, &avail_in, &next_in, &avail_out, &next_out, nullptr);
      chunk.append(reinterpret_cast<const char*>(buffer.data()), buffer.size() - avail_out);
      if (avail_in == 0 && !BrotliEncoderHasMoreOutput(state)) {
        break;
      }
    }
    encoded.push_back(chunk);
  }
  BrotliEncoderDestroyInstance(state);
  return encoded;
}

inline std::vector<std::string> zstd_pieces(const std::vector<std::string>& pieces, int window_log = 0) {
  ZSTD_CCtx* context = ZSTD_createCCtx();
  if (window_log != 0) {
    ZSTD_CCtx_setParameter(context, ZSTD_c_windowLog, window_log);
  }
  std::vector<std::string> encoded;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    auto mode = i + 1 == pieces.size() ? ZSTD_e_end : ZSTD_e_flush;
    ZSTD_inBuffer input{pieces[i].data(), pieces[i].size(), 0};
    std::string chunk;
    std::size_t remaining = 1;
    while (remaining != 0) {
      std::array<char, 4096> buffer{};
      ZSTD_outBuffer output{buffer.data(), buffer.size(), 0};
      remaining = ZSTD_compressStream2(context, &output, &input, mode);
      if (ZSTD_isError(remaining)) {
        throw std::runtime_error(ZSTD_getErrorName(remaining));
      }
      chunk.append(buffer.data(), output.pos);
    }
    encoded.push_back(chunk);
  }
  ZSTD_freeCCtx(context);
  return encoded;
}

inline std::vector<std::string> compress_pieces(Codec codec, const std::vector<std::string>& pieces) {
  switch (codec) {
  case Codec::gzip:
    return zlib_pieces(MAX_WBITS + 16, pieces);
  case Codec::zlib_deflate:
    return zlib_pieces(MAX_WBITS, pieces);
  case Codec::raw_deflate:
    return zlib_pieces(-MAX_WBITS, pieces);
  case Codec::brotli:
    return brotli_pieces(pieces);
  case Codec::zstd:
    return zstd_pieces(pieces);
  }
  throw std::logic_error("unknown codec");
}

// Each codec with its Content-Encoding value and a name for failure messages.
struct Encoding {
  Codec codec;
  std::string_view header;
  std::string_view name;
};

inline constexpr std::array<Encoding, 5> k_encodings{{
    {Codec::gzip, "gzip", "gzip"},
    {Codec::zlib_deflate, "deflate", "zlib-wrapped deflate"},
    {Codec::raw_deflate, "deflate", "raw deflate"},
    {Codec::brotli, "br", "brotli"},
    {Codec::zstd, "zstd", "zstd"},
}};

inline std::string compress(Codec codec, const std::string& text) {
  return compress_pieces(codec, {text}).front();
}

} // namespace keyshim::test
