#include "config/loader.hpp"

#include "config/file_access.hpp"
#include "config/nesting_limit.hpp"
#include "config/pool_reader.hpp"
#include "config/text_helpers.hpp"

#include <toml++/toml.h>

namespace keyshim::config {

LoadResult load_pool_text(const std::string& text, const std::string& path, SecretResolution secrets) {
  // Before toml++, which recurses per nesting level without a bound: a
  // hostile header crashed `check` and, on SIGHUP, a running serve.
  if (std::optional<NestingProblem> deep = find_deep_nesting(text)) {
    return {std::nullopt, {{path, deep->line, deep->column, std::move(deep->message)}}};
  }
  toml::table root;
  try {
    root = toml::parse(std::string_view(text), std::string_view(path));
  } catch (const toml::parse_error& error) {
    const toml::source_position& at = error.source().begin;
    return {std::nullopt,
            {{path, static_cast<int>(at.line), static_cast<int>(at.column),
              "invalid TOML: " + lowercase_first(std::string(error.description()))}}};
  }
  return PoolReader(path, secrets).read(root);
}

LoadResult load_pool_file(const std::string& path, SecretResolution secrets) {
  FileRead read = read_private_file(path);
  if (!read.text) {
    return {std::nullopt, {{path, 0, 0, read.problem}}};
  }
  return load_pool_text(*read.text, path, secrets);
}

} // namespace keyshim::config
