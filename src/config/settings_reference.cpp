#include "config/settings_reference.hpp"

#include "config/settings_table.hpp"

#include "util/duration.hpp"

#include <fmt/format.h>

#include <limits>

namespace keyshim::config {
namespace {

// Pipes would end a Markdown table cell.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  return out;
}

std::string bounds_text(const Setting& s, std::string (*show)(std::int64_t)) {
  bool has_max = s.max != std::numeric_limits<std::int64_t>::max();
  if (s.min > 0 && has_max) {
    return fmt::format(", from {} to {}", show(s.min), show(s.max));
  }
  if (has_max) {
    return fmt::format(", at most {}", show(s.max));
  }
  return s.min > 0 ? fmt::format(", at least {}", show(s.min)) : "";
}

std::string show_integer(std::int64_t value) {
  return fmt::format("{}", value);
}

std::string show_duration(std::int64_t ms) {
  return util::format_duration(milliseconds(ms));
}

} // namespace

std::string setting_type_text(const Setting& setting) {
  switch (setting.type) {
  case SettingType::listen:
    return "address, \"HOST:PORT\" on a loopback interface";
  case SettingType::secret:
    return "string, never shown in messages";
  case SettingType::label:
    return "string of letters, digits and - _ . @ + / ~";
  case SettingType::env_name:
    return "environment variable name";
  case SettingType::string_list:
    return "array of strings";
  case SettingType::command:
    return "array of strings: the program, then its arguments";
  case SettingType::size:
    return "size (bytes, or a string with B, KiB, MiB or GiB)";
  case SettingType::duration:
    return "duration" + bounds_text(setting, show_duration);
  case SettingType::integer:
    return "integer" + bounds_text(setting, show_integer);
  case SettingType::url:
    return "URL, https://HOST[:PORT][/PATH], or http:// to a loopback host";
  case SettingType::auth:
  case SettingType::strategy:
  case SettingType::capture:
    return "string, one of the values above";
  case SettingType::file:
    return "path of a readable file";
  case SettingType::proxy:
    return "URL, http://[USER:PASSWORD@]HOST[:PORT], or \"\"";
  case SettingType::boolean:
    return "true or false";
  case SettingType::model_patterns:
    return "array of model names or patterns (* any characters, ? one; case does not matter)";
  case SettingType::count:
    return "count, a whole number or a string with K, M or G (\"200K\", \"1.5M\")" +
           bounds_text(setting, show_integer);
  case SettingType::time_of_day:
    return "time of day, \"HH:MM\"";
  case SettingType::day_zone:
    return "time zone, \"local\", \"UTC\" or \"+HH:MM\" / \"-HH:MM\"";
  }
  return "";
}

void settings_reference_roff(util::roff::Page& page) {
  for (Section section : {Section::server, Section::upstream, Section::key}) {
    page.subsection(section == Section::server     ? "[server]"
                    : section == Section::upstream ? "[upstream] and [pools.NAME]"
                                                   : "[[keys]] and [[pools.NAME.keys]]");
    for (const Setting& s : settings_table()) {
      if (s.section != section) {
        continue;
      }
      page.tagged(util::roff::bold(s.name), util::roff::sentence(s.doc));
      page.line_break();
      page.text(fmt::format("Type: {}. Default: {}. {}.", setting_type_text(s),
                            s.default_text.empty() ? "none" : fmt::format("`{}`", s.default_text),
                            s.reloadable ? "A reload applies a change" : "A change takes a restart"));
    }
  }
}

std::string settings_reference_markdown() {
  std::string out;
  for (Section section : {Section::server, Section::upstream, Section::key}) {
    out += section == Section::key        ? "\n`[[keys]]` and `[[pools.NAME.keys]]` (one per key)\n\n"
           : section == Section::upstream ? "\n`[upstream]` (the default pool) and each `[pools.NAME]`\n\n"
                                          : fmt::format("\n`[{}]`\n\n", to_string(section));
    out += "| setting | default | on reload | meaning |\n|---|---|---|---|\n";
    for (const Setting& s : settings_table()) {
      if (s.section != section) {
        continue;
      }
      out += fmt::format("| `{}` | {} | {} | {} |\n", s.name,
                         s.default_text.empty() ? "—" : fmt::format("`{}`", cell(s.default_text)),
                         s.reloadable ? "applies" : "restart", cell(s.doc));
    }
  }
  return out;
}

} // namespace keyshim::config
