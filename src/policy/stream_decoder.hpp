#pragma once
// Reading a compressed response body: the relay decodes a copy of a
// gzip/deflate/br/zstd event stream to check its first event, the usage meter
// decodes a copy of all of it, and the encoded bytes are relayed untouched.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace keyshim::policy {

// Where a decoder puts its output: each call gets the next decoded bytes, at
// most one scratch buffer (16 KiB) of them, valid only during the call.
class DecodedSink {
public:
  virtual void take(std::string_view decoded) = 0;

protected:
  ~DecodedSink() = default;
};

// An incremental decoder of one Content-Encoding. Memory is bounded: decoding
// goes through a fixed scratch buffer, and zstd windows above 8 MiB (the HTTP
// limit of RFC 9659) are refused as corrupt. Not thread-safe; one per response.
class StreamDecoder {
public:
  virtual ~StreamDecoder() = default;
  // Decode the next piece of the encoded body, handing all of its decoded bytes
  // to `sink` in order, however far the piece inflates. False once the input
  // is corrupt.
  virtual bool decode(std::string_view in, DecodedSink& sink) = 0;
  // Decode the next piece, appending decoded bytes to `out` but never letting
  // out.size() exceed `max_out` (extra output is dropped; the caller only
  // looks at the start). False once the input is corrupt.
  bool feed(std::string_view in, std::string& out, std::size_t max_out);
};

// A decoder for a Content-Encoding header value (case-insensitive, surrounding
// whitespace ignored): "" or "identity" -> pass-through; "gzip"/"x-gzip";
// "deflate" (zlib-wrapped, and raw deflate as servers wrongly send it: detect
// from the first bytes); "br"; "zstd". nullptr for anything else, including
// stacked encodings like "gzip, br": the caller then skips its check.
std::unique_ptr<StreamDecoder> make_decoder(std::string_view content_encoding);

// Whether `content_encoding` is "" or "identity" (any case, whitespace
// ignored): a body that needs no decoder.
bool is_identity(std::string_view content_encoding);

} // namespace keyshim::policy
