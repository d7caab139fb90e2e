#pragma once
// What keyshim answers itself, before anything is relayed: the guards that
// protect the port holding the keys (Host, Origin, client_token), /health,
// GET and HEAD on `/` and on a pool's root (`/NAME`, `/NAME/`), /status,
// /metrics, the 404 for a path no pool serves, and the 503 that explains an
// unusable pool file. Event-loop thread.
#include "config/config.hpp"
#include "relay/answers.hpp"
#include "relay/beast.hpp"
#include "relay/capture.hpp"
#include "relay/pool_state.hpp"
#include "relay/wait_room.hpp"

#include <optional>
#include <string>

namespace keyshim::server {

class PublishedState;

class OwnEndpoints {
public:
  // /status and /metrics name `config_path`, the generation `published`
  // counts and `listen`, read at each request: the server fixes it before
  // it serves. /status reports each pool's queue in `waits`; /captures
  // serves `captures`.
  OwnEndpoints(std::string config_path, const PublishedState& published, const config::ListenAddress& listen,
               const relay::WaitRoom& waits, const relay::CaptureRing& captures);

  // keyshim's own answer to this request, or nullopt to relay it. `state` is
  // the snapshot the request is served from.
  std::optional<relay::Answer> answer(const relay::RequestHead& head, const relay::PoolState& state) const;

private:
  // /status or /metrics (GET, behind the token).
  relay::Answer instance_report(std::string_view path, const relay::PoolState& state) const;
  // /captures and /captures/ID (GET, behind the token).
  relay::Answer captures(std::string_view target, std::string_view path, const relay::PoolState& state) const;

  std::string m_config_path;
  const PublishedState& m_published;
  const config::ListenAddress& m_listen;
  const relay::WaitRoom& m_waits;
  const relay::CaptureRing& m_captures;
};

} // namespace keyshim::server
