#include "policy/request_session.hpp"

#include "policy/request_model.hpp"

#include <string.h> // memmem (a GNU and BSD extension; glibc's is far faster than a byte loop)

namespace keyshim::policy {
namespace {

// 64-bit FNV-1a: the same id is the same session across reloads. Two ids
// that collide share a key, which costs nothing but a cache miss.
std::uint64_t identity(std::string_view id) {
  std::uint64_t hash = 0xcbf29ce484222325;
  for (char c : id) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3;
  }
  return hash == 0 ? 1 : hash;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// The OpenAI APIs whose requests take a prompt_cache_key (and the servers
// that copy their paths): the body of any other is never read.
bool takes_prompt_cache_key(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  while (!path.empty() && path.back() == '/') {
    path.remove_suffix(1);
  }
  return ends_with(path, "/chat/completions") || ends_with(path, "/responses");
}

} // namespace

std::uint64_t request_session(std::string_view header_id, std::string_view target, std::string_view body) {
  if (!header_id.empty()) {
    return identity(header_id);
  }
  if (!takes_prompt_cache_key(target)) {
    return 0;
  }
  // Most bodies never name the member: one memmem decides. A body that
  // does is scanned, so that the words of a prompt are never taken for it.
  constexpr std::string_view k_member = "\"prompt_cache_key\"";
  if (::memmem(body.data(), body.size(), k_member.data(), k_member.size()) == nullptr) {
    return 0;
  }
  std::optional<std::string_view> key = top_level_string(body, "prompt_cache_key");
  return key && !key->empty() ? identity(*key) : 0;
}

} // namespace keyshim::policy
