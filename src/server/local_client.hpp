#pragma once
// Talking to a keyshim on loopback, for the commands that ask a running
// instance (status, reload) and for the demo. Keeps httplib out of cli/.
#include "config/config.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyshim::server {

struct LocalResponse {
  int status = 0;       // 0 when no HTTP response arrived
  std::string body;     // the body, unless a receiver consumed it
  bool refused = false; // nothing accepted the connection
  std::string error;    // transport error text when status is 0
};

// GET `path` (2 s to connect, 5 s to read), presenting `token` as a Bearer
// key when it is not empty.
LocalResponse local_get(const config::ListenAddress& at, const std::string& path, const std::string& token);

// POST `body` as JSON asking for an event stream; a 200's body goes to
// `on_bytes` as it arrives, any other status's body is kept in the response.
LocalResponse local_post_stream(const config::ListenAddress& at, const std::string& path,
                                const std::string& body, const std::string& token,
                                const std::function<void(std::string_view)>& on_bytes);

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// A request sent as given: `target` is not re-encoded, nothing compressed is
// asked for, and no Content-Type is added to a request that has one.
struct LocalRequest {
  std::string method;
  std::string target;
  HeaderList headers;
  std::string body;
};

// Send `request` (2 s to connect; `read_seconds` of silence at most):
// `on_head` gets the status and fields when the head arrives, `on_bytes`
// every piece of the (de-chunked) body as it arrives; `body` stays empty.
LocalResponse local_send(const config::ListenAddress& at, const LocalRequest& request, int read_seconds,
                         const std::function<void(int status, const HeaderList& headers)>& on_head,
                         const std::function<void(std::string_view)>& on_bytes);

} // namespace keyshim::server
