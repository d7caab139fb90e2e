#pragma once
// The Boost.Beast/Asio types of the proxy path, in one place. Everything runs
// on one io_context thread, so sockets and timers use the io_context's own
// executor type: the type-erased default costs ~6 % CPU per request.
#include <utility> // Boost 1.74's asio/awaitable.hpp uses std::exchange without including it

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "util/size_class_allocator.hpp"

namespace keyshim::relay {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

using Executor = asio::io_context::executor_type;
using Socket = asio::basic_stream_socket<tcp, Executor>;
using Acceptor = asio::basic_socket_acceptor<tcp, Executor>;
using Resolver = asio::ip::basic_resolver<tcp, Executor>;
using Timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                         asio::wait_traits<std::chrono::steady_clock>, Executor>;
using MonoTime = std::chrono::steady_clock::time_point;

// The heads of the proxy path: their fields (a block each) come from a
// per-thread cache of small blocks, as each request's come and go together.
using HeadAllocator = util::SizeClassAllocator<char>;
using HeadFields = http::basic_fields<HeadAllocator>;
using RequestHead = http::request_header<HeadFields>;
using ResponseHead = http::response_header<HeadFields>;
// The client's request as read: head and the whole body in one buffer.
using ClientRequest = http::request<http::string_body, HeadFields>;
using RequestParser = http::request_parser<http::string_body, HeadAllocator>;
// The upstream's response, read head first, then the body piece by piece.
using ResponseParser = http::response_parser<http::buffer_body, HeadAllocator>;

// Fields by a known name (never http::field::unknown), found by a walk of
// the head's list comparing the names' enums, in the order they came.
// Beast's own lookups (fields[name], find, count, equal_range) search its
// tree comparing names without case, about ten times the instructions for
// a head of a dozen fields, and each request looks up about ten.
template <class Fields, class Visit>
void for_each_field(const Fields& fields, http::field name, Visit visit) {
  for (const auto& field : fields) {
    if (field.name() == name) {
      visit(field.value());
    }
  }
}

// The first field `name`, or null (as fields.find(name)).
template <class Fields>
const typename Fields::value_type* first_field(const Fields& fields, http::field name) {
  for (const auto& field : fields) {
    if (field.name() == name) {
      return &field;
    }
  }
  return nullptr;
}

// The value of the first field `name`, or "" (as fields[name]).
template <class Fields> std::string_view field_value(const Fields& fields, http::field name) {
  const auto* field = first_field(fields, name);
  return field ? field->value() : std::string_view();
}

// How many fields are named `name` (as fields.count(name)).
template <class Fields> std::size_t field_count(const Fields& fields, http::field name) {
  std::size_t n = 0;
  for_each_field(fields, name, [&](std::string_view) { ++n; });
  return n;
}

// Whether a field `name` is present (as fields.find(name) != fields.end()).
template <class Fields> bool has_field(const Fields& fields, http::field name) {
  return first_field(fields, name) != nullptr;
}

} // namespace keyshim::relay
