#include "service/unit_templates.hpp"

#include "keyshim/service_templates.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace keyshim::service {
namespace {

constexpr std::string_view k_exec_start = "ExecStart=";

// Paths land inside a unit line or an XML text node. A newline would end the
// ExecStart= line (and could inject directives), and XML 1.0 cannot carry
// most control characters even escaped, so both are refused outright.
void require_usable_path(const std::string& path, const char* what) {
  if (path.empty() || path.front() != '/') {
    throw std::invalid_argument(fmt::format("{} \"{}\" is not an absolute path", what, path));
  }
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      throw std::invalid_argument(
          fmt::format("{} \"{}\" contains a control character; a service file cannot name it", what, path));
    }
  }
}

bool is_plain_exec_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' || c == '.' ||
         c == '_' || c == '-' || c == '+' || c == ',' || c == ':' || c == '=' || c == '@' || c == '%' ||
         c == '$' || static_cast<unsigned char>(c) >= 0x80;
}

void replace_all(std::string& text, std::string_view from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// Doubles the characters systemd would expand, then double-quotes with C
// escapes unless every character is a plain path character.
std::string quote_exec_word(std::string_view word, std::string_view doubled) {
  bool plain = !word.empty();
  std::string expanded;
  for (char c : word) {
    plain = plain && is_plain_exec_char(c);
    if (doubled.find(c) != std::string_view::npos) {
      expanded += c;
    }
    expanded += c;
  }
  if (plain) {
    return expanded;
  }
  std::string quoted = "\"";
  for (char c : expanded) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
    }
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

} // namespace

std::string_view systemd_unit_template() {
  return generated::k_systemd_unit;
}

std::string_view launchd_plist_template() {
  return generated::k_launchd_plist;
}

std::string systemd_exec_quote(std::string_view argument) {
  // Arguments get both %-specifier and $VARIABLE expansion, even in quotes.
  return quote_exec_word(argument, "%$");
}

std::string systemd_exec_path(std::string_view path) {
  // systemd's "Executable name contains special characters" check.
  if (path.find_first_of("\"'\\") != std::string_view::npos) {
    throw std::invalid_argument(
        fmt::format("keyshim binary \"{}\": systemd cannot run a program whose path contains quotes or "
                    "backslashes; move keyshim to a directory without them",
                    path));
  }
  // The program path gets specifier expansion but no variable expansion.
  return quote_exec_word(path, "%");
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    default:
      out += c;
      break;
    }
  }
  return out;
}

std::string render_systemd_unit(const std::string& binary_path, const std::string& config_path) {
  require_usable_path(binary_path, "keyshim binary");
  require_usable_path(config_path, "pool file");

  std::string unit(systemd_unit_template());
  // The template has exactly one ExecStart= line, at the start of a line (a
  // unit test holds the shipped file to that).
  std::size_t at = unit.find(fmt::format("\n{}", k_exec_start));
  if (at == std::string::npos) {
    throw std::logic_error("systemd/keyshim.service has no ExecStart= line");
  }
  at += 1;
  std::size_t end = unit.find('\n', at);
  std::string line = fmt::format("{}{} serve -c {}", k_exec_start, systemd_exec_path(binary_path),
                                 systemd_exec_quote(config_path));
  unit.replace(at, end == std::string::npos ? std::string::npos : end - at, line);
  return unit;
}

std::string render_launchd_plist(const std::string& binary_path, const std::string& config_path,
                                 const std::string& home) {
  require_usable_path(binary_path, "keyshim binary");
  require_usable_path(config_path, "pool file");
  require_usable_path(home, "home directory");

  std::string plist(launchd_plist_template());
  replace_all(plist, "@KEYSHIM_BIN@", xml_escape(binary_path));
  replace_all(plist, "@KEYSHIM_CONFIG@", xml_escape(config_path));
  // "/Users/u/" would give "/Users/u//Library/Logs"; harmless, but untidy.
  std::string trimmed_home = home;
  while (trimmed_home.size() > 1 && trimmed_home.back() == '/') {
    trimmed_home.pop_back();
  }
  replace_all(plist, "@HOME@", xml_escape(trimmed_home));
  return plist;
}

} // namespace keyshim::service
