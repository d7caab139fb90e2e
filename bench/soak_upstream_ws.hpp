// The soak upstream's WebSocket echo (Beast, synchronous, in the
// connection's own thread): see soak_upstream_ws.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

// Accepts the upgrade whose request head is `head` on `fd` (the caller keeps
// and closes fd), answers 101 with X-Soak-Key `key_id` and X-Soak-At `at`,
// and echoes each message with its type (text or binary) as the seed's
// ws_script says: all of them, or an abrupt reset after
// `upstream_cut_after`. Every blocking step is bounded by a watchdog.
void serve_ws(int fd, const std::string& head, const std::string& key_id, const std::string& at,
              std::uint64_t seed, const std::atomic<bool>& stop);
