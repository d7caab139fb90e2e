// The pool file loader reads a file the user wrote, or one an attacker left
// where keyshim looks (README: hostile pool files). It must report problems,
// never crash, recurse without bound or hang, and its problem messages must
// never repeat a key's material. Secrets are not resolved: key_cmd never runs.
#include "config/loader.hpp"
#include "config/nesting_limit.hpp"
#include "fuzz_check.hpp"

#include <toml++/toml.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

// Every string value and every key name in the document, and separately the
// `key` strings of [[keys]] entries.
struct Strings {
  std::vector<std::string> all;
  std::vector<std::string> keys;
};

void collect(const toml::node& node, Strings& out, int depth) {
  if (depth > keyshim::config::k_max_nesting) {
    return;
  }
  if (const toml::table* table = node.as_table()) {
    for (const auto& [name, value] : *table) {
      out.all.emplace_back(name.str());
      collect(value, out, depth + 1);
    }
  } else if (const toml::array* array = node.as_array()) {
    for (const toml::node& item : *array) {
      collect(item, out, depth + 1);
    }
  } else if (std::optional<std::string> text = node.value_exact<std::string>()) {
    out.all.push_back(*text);
  }
}

Strings strings_of(const std::string& text) {
  Strings out;
  if (keyshim::config::find_deep_nesting(text)) {
    return out; // the loader refuses it before toml++ sees it
  }
  toml::table root;
  try {
    root = toml::parse(text);
  } catch (const toml::parse_error&) {
    return out;
  }
  collect(root, out, 0);
  if (const toml::array* keys = root["keys"].as_array()) {
    for (const toml::node& entry : *keys) {
      if (const toml::table* table = entry.as_table()) {
        if (std::optional<std::string> key = (*table)["key"].value_exact<std::string>()) {
          out.keys.push_back(*key);
        }
      }
    }
  }
  return out;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A key that also appears in another string or name may be quoted
// legitimately as that one (a label equal to the key, say); a short key can
// appear in any message by chance; an escaped one is not in the text as is.
bool checkable(const std::string& key, const Strings& strings, const std::string& text) {
  if (key.size() < 12 || !contains(text, key)) {
    return false;
  }
  int seen = 0;
  for (const std::string& other : strings.all) {
    seen += contains(other, key) ? 1 : 0;
  }
  return seen == 1;
}

// The same key with every letter and digit changed (rot13, digits +5), so
// that it fails or passes the same checks.
std::string disguised(const std::string& key) {
  std::string out = key;
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>('a' + (c - 'a' + 13) % 26);
    } else if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>('A' + (c - 'A' + 13) % 26);
    } else if (c >= '0' && c <= '9') {
      c = static_cast<char>('0' + (c - '0' + 5) % 10);
    }
  }
  return out;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string problems_of(const std::string& text) {
  return keyshim::config::load_pool_text(text, "fuzz.toml", keyshim::config::SecretResolution::skip)
      .problems_text();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  keyshim::config::LoadResult result =
      keyshim::config::load_pool_text(text, "fuzz.toml", keyshim::config::SecretResolution::skip);
  KEYSHIM_FUZZ_CHECK(result.ok() == result.problems.empty());
  if (result.ok()) {
    KEYSHIM_FUZZ_CHECK(result.config->key_count() > 0);
    return 0;
  }
  // A message that contains the key is a leak only if it follows the key: the
  // fuzzer readily makes a key out of a message's own words. Loading the file
  // again with the key disguised tells the two apart.
  std::string problems = result.problems_text();
  Strings strings = strings_of(text);
  for (const std::string& key : strings.keys) {
    if (!checkable(key, strings, text) || !contains(problems, key)) {
      continue;
    }
    std::string other = disguised(key);
    if (other != key && !contains(problems_of(replaced(text, key, other)), key)) {
      std::fprintf(stderr, "a problem message repeats the key %s:\n%s\n", key.c_str(), problems.c_str());
      std::abort();
    }
  }
  return 0;
}
