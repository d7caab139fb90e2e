#include "server/local_client.hpp"

#include <httplib.h>

namespace keyshim::server {
namespace {

httplib::Client make_client(const config::ListenAddress& at, time_t read_seconds) {
  httplib::Client client(at.host, at.port);
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(read_seconds, 0);
  client.set_write_timeout(5, 0);
  client.set_tcp_nodelay(true);
  return client;
}

void note_failure(LocalResponse& out, httplib::Error error) {
  out.refused = error == httplib::Error::Connection || error == httplib::Error::ConnectionTimeout;
  out.error = httplib::to_string(error);
}

} // namespace

LocalResponse local_get(const config::ListenAddress& at, const std::string& path, const std::string& token) {
  httplib::Client client = make_client(at, 5);
  httplib::Headers headers;
  if (!token.empty()) {
    headers.emplace("Authorization", "Bearer " + token);
  }
  LocalResponse out;
  httplib::Result result = client.Get(path, headers);
  if (!result) {
    note_failure(out, result.error());
    return out;
  }
  out.status = result->status;
  out.body = result->body;
  return out;
}

LocalResponse local_post_stream(const config::ListenAddress& at, const std::string& path,
                                const std::string& body, const std::string& token,
                                const std::function<void(std::string_view)>& on_bytes) {
  httplib::Client client = make_client(at, 30);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = {{"Authorization", "Bearer " + (token.empty() ? std::string("keyshim") : token)},
                 {"Accept", "text/event-stream"},
                 {"Content-Type", "application/json"}};
  req.body = body;
  LocalResponse out;
  req.response_handler = [&out](const httplib::Response& res) {
    out.status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, std::size_t size, std::uint64_t, std::uint64_t) {
    if (out.status == 200) {
      on_bytes(std::string_view(data, size));
    } else {
      out.body.append(data, size);
    }
    return true;
  };
  httplib::Result result = client.send(req);
  if (!result) {
    note_failure(out, result.error());
    out.status = 0;
  }
  return out;
}

LocalResponse local_send(const config::ListenAddress& at, const LocalRequest& request, int read_seconds,
                         const std::function<void(int status, const HeaderList& headers)>& on_head,
                         const std::function<void(std::string_view)>& on_bytes) {
  httplib::Client client = make_client(at, read_seconds);
  client.set_url_encode(false); // the captured target, byte for byte
  client.set_decompress(false); // else it asks for gzip itself
  httplib::Request req;
  req.method = request.method;
  req.path = request.target;
  for (const auto& [name, value] : request.headers) {
    req.headers.emplace(name, value);
  }
  req.body = request.body;
  LocalResponse out;
  req.response_handler = [&](const httplib::Response& res) {
    out.status = res.status;
    HeaderList headers(res.headers.begin(), res.headers.end());
    on_head(res.status, headers);
    return true;
  };
  req.content_receiver = [&](const char* data, std::size_t size, std::uint64_t, std::uint64_t) {
    on_bytes(std::string_view(data, size));
    return true;
  };
  httplib::Result result = client.send(req);
  if (!result) {
    note_failure(out, result.error());
  }
  return out;
}

} // namespace keyshim::server
