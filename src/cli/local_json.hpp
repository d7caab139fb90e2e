#pragma once
// Asking a running keyshim for one of its own JSON pages (/status,
// /captures): where it is, the GET with its client_token, and a message for
// each way that can fail, naming the address and the fix. `status`, `top`,
// `reload`, `run`, `log`, `show` and `replay` all ask through here.
#include "config/config.hpp"
#include "util/json.hpp"

#include <optional>
#include <string>

namespace keyshim::cli {

// Where a running keyshim should be and the credential it wants.
struct InstanceAddress {
  config::ListenAddress listen;
  std::string client_token; // "" when the pool file sets none or could not be read
  std::string config_path;  // the file the address and token came from, "" for none
};

// One answer of a running keyshim, or why there is none.
struct LocalAnswer {
  int http_status = 0;            // 0 when nothing answered
  std::string body;               // as received
  std::optional<util::Json> json; // the body, when it is JSON
  std::string error;              // "" when the answer is usable; else the message for the user
  bool refused = false;           // nothing accepted the connection: no instance there

  bool ok() const { return error.empty(); }
};

// `answer` with `error` as its message.
LocalAnswer failed(LocalAnswer answer, std::string error);

// GET `path` from `instance` (2 s to connect, 5 s to read), presenting its
// client_token. Fails when nothing answered or the token was refused; any
// other status is the caller's to judge, with the body parsed when it is JSON.
LocalAnswer local_get_json(const InstanceAddress& instance, const std::string& path);

// The message of a keyshim error body: {"error": "..."} or
// {"error": {"message": "..."}}; "" for anything else.
std::string error_message(const util::Json& json);

} // namespace keyshim::cli
