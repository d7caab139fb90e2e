#include "config/decode.hpp"

#include "config/model_filter.hpp"
#include "config/text_helpers.hpp"
#include "config/value_parsers.hpp"
#include "util/duration.hpp"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>

namespace keyshim::config {
namespace {

Decoded fail(std::string error) {
  return {std::nullopt, std::move(error)};
}
Decoded ok(SettingValue value) {
  return {std::move(value), ""};
}

Decoded wrong_type(const toml::node& node, std::string_view expected) {
  return fail(fmt::format("must be {}, not {}", expected, describe_node_type(node)));
}

// Why `value` is outside the setting's bounds, or "" when it is inside.
std::string bounds_problem(const Setting& setting, std::int64_t value, std::string_view shown_min,
                           std::string_view shown_max) {
  if (value < setting.min) {
    return fmt::format("must be at least {}", shown_min);
  }
  if (value > setting.max) {
    return fmt::format("must be at most {}", shown_max);
  }
  return "";
}

Decoded decode_duration(const Setting& setting, const toml::node& node) {
  constexpr std::string_view k_expected =
      "a duration like \"250ms\", \"10s\", \"5m\", \"1h\" or whole seconds";
  std::chrono::milliseconds value{};
  if (const auto* seconds = node.as_integer()) {
    if (seconds->get() < 0 || seconds->get() > setting.max / 1000) {
      return fail(bounds_problem(setting, seconds->get() < 0 ? -1 : setting.max + 1,
                                 util::format_duration(milliseconds(setting.min)),
                                 util::format_duration(milliseconds(setting.max))));
    }
    value = std::chrono::seconds(seconds->get());
  } else if (const auto* text = node.as_string()) {
    auto parsed = util::parse_duration(text->get());
    if (!parsed) {
      return fail(fmt::format("must be {}, not \"{}\"", k_expected, text->get()));
    }
    value = *parsed;
  } else {
    return wrong_type(node, k_expected);
  }
  std::string problem =
      bounds_problem(setting, value.count(), util::format_duration(milliseconds(setting.min)),
                     util::format_duration(milliseconds(setting.max)));
  return problem.empty() ? ok(value) : fail(problem);
}

Decoded decode_size(const Setting& setting, const toml::node& node) {
  constexpr std::string_view k_expected = "a size in bytes, or a string like \"512KiB\", \"64MiB\", \"1GiB\"";
  std::uint64_t bytes = 0;
  if (const auto* number = node.as_integer()) {
    if (number->get() < 0) {
      return fail(fmt::format("must be at least {} bytes", setting.min));
    }
    bytes = static_cast<std::uint64_t>(number->get());
  } else if (const auto* text = node.as_string()) {
    auto parsed = parse_size(text->get());
    if (!parsed) {
      return fail(fmt::format("must be {}, not \"{}\"", k_expected, text->get()));
    }
    bytes = *parsed;
  } else {
    return wrong_type(node, k_expected);
  }
  if (bytes < static_cast<std::uint64_t>(setting.min)) {
    return fail(fmt::format("must be at least {} bytes", setting.min));
  }
  return ok(bytes);
}

Decoded decode_boolean(const toml::node& node) {
  const auto* flag = node.as_boolean();
  if (!flag) {
    return wrong_type(node, "true or false");
  }
  return ok(flag->get());
}

// A limit: "60", 60, "200K", "1.5M". The fix names the forms, so "2MB" or
// "60/min" (the window is in the setting's name) says what to write instead.
Decoded decode_count(const Setting& setting, const toml::node& node) {
  constexpr std::string_view k_expected = "a count like 60, \"200K\" or \"2M\" (K, M, G: thousands, "
                                          "millions, billions)";
  std::int64_t count = 0;
  if (const auto* number = node.as_integer()) {
    count = number->get();
  } else if (const auto* text = node.as_string()) {
    std::optional<std::uint64_t> parsed = parse_count(text->get());
    if (!parsed) {
      return fail(fmt::format("must be {}, not \"{}\"", k_expected, text->get()));
    }
    count = static_cast<std::int64_t>(std::min<std::uint64_t>(*parsed, INT64_MAX));
  } else {
    return wrong_type(node, k_expected);
  }
  if (count < setting.min) {
    return fail(fmt::format("must be at least {}; remove it for no limit", setting.min));
  }
  if (count > setting.max) {
    return fail(fmt::format("must be at most {}", setting.max));
  }
  return ok(static_cast<std::uint64_t>(count));
}

Decoded decode_integer(const Setting& setting, const toml::node& node) {
  const auto* number = node.as_integer();
  if (!number) {
    return wrong_type(node, "an integer");
  }
  std::string problem =
      bounds_problem(setting, number->get(), std::to_string(setting.min), std::to_string(setting.max));
  return problem.empty() ? ok(number->get()) : fail(problem);
}

Decoded decode_string_list(const toml::node& node, bool is_command) {
  const auto* array = node.as_array();
  std::string_view expected =
      is_command ? "an array of strings like [\"pass\", \"show\", \"openai\"]" : "an array of strings";
  if (!array) {
    return wrong_type(node, expected);
  }
  std::vector<std::string> items;
  for (const toml::node& item : *array) {
    const auto* text = item.as_string();
    if (!text) {
      return fail(
          fmt::format("must be {}; item {} is {}", expected, items.size() + 1, describe_node_type(item)));
    }
    if (is_command && text->get().empty()) {
      return fail(fmt::format("has an empty item {}", items.size() + 1));
    }
    items.push_back(text->get());
  }
  if (is_command && items.empty()) {
    return fail("is empty; give the command and its arguments, like [\"pass\", \"show\", \"openai\"]");
  }
  return ok(std::move(items));
}

// An array of model patterns: strings fit to match a model name, and at
// least `setting.min` of them (an empty `models` would serve no model).
Decoded decode_model_patterns(const Setting& setting, const toml::node& node) {
  Decoded list = decode_string_list(node, false);
  if (!list.value) {
    return list;
  }
  const auto& patterns = std::get<std::vector<std::string>>(*list.value);
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    if (std::string problem = model_pattern_problem(patterns[i]); !problem.empty()) {
      return fail(fmt::format("item {} {}", i + 1, problem));
    }
  }
  if (patterns.size() < static_cast<std::size_t>(setting.min)) {
    return fail("is empty, so its keys would serve no model; list models like [\"gpt-4o*\"], or remove it "
                "to serve every model");
  }
  return list;
}

bool holds_pem_certificate(const std::string& path) {
  BIO* bio = BIO_new_file(path.c_str(), "r");
  if (bio == nullptr) {
    return false;
  }
  X509* certificate = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  bool found = certificate != nullptr;
  X509_free(certificate);
  BIO_free(bio);
  ERR_clear_error(); // a failed parse leaves errors that would confuse later TLS diagnostics
  return found;
}

Decoded decode_file(const toml::node& node, const std::string& base_dir) {
  const auto* text = node.as_string();
  if (!text || text->get().empty()) {
    return text ? fail("is empty; give the path of a PEM file") : wrong_type(node, "a file path");
  }
  std::filesystem::path path(text->get());
  if (path.is_relative() && !base_dir.empty()) {
    path = std::filesystem::path(base_dir) / path;
  }
  std::ifstream in(path);
  if (!in) {
    return fail(fmt::format("names \"{}\", which cannot be read: {}", path.string(), errno_text(errno)));
  }
  // ca_file is the only file setting. Without a certificate in it every TLS
  // upstream would fail as "tls error", with nothing saying why.
  if (!holds_pem_certificate(path.string())) {
    return fail(fmt::format("names \"{}\", which holds no PEM certificate; give the CA certificate "
                            "itself (-----BEGIN CERTIFICATE-----)",
                            path.string()));
  }
  return ok(path.string());
}

bool is_env_name(const std::string& name) {
  static const std::regex k_name("[A-Za-z_][A-Za-z0-9_]*");
  return std::regex_match(name, k_name);
}

// A parser's answer: its value, or the error it wrote.
template <class T> Decoded parsed(std::optional<T> value, const std::string& error) {
  return value ? ok(std::move(*value)) : fail(error);
}

Decoded decode_string_kind(const Setting& setting, const std::string& text) {
  std::string error;
  switch (setting.type) {
  case SettingType::listen:
    return parsed(parse_listen_address(text, error), error);
  case SettingType::url:
    return parsed(parse_upstream_url(text, error), error);
  case SettingType::auth:
    return parsed(parse_auth(text, error), error);
  case SettingType::proxy:
    return parsed(parse_proxy_setting(text, error), error);
  case SettingType::strategy:
    return parsed(parse_strategy(text, error), error);
  case SettingType::capture:
    return parsed(parse_capture_mode(text, error), error);
  case SettingType::time_of_day:
    if (auto minutes = parse_time_of_day(text)) {
      return ok(std::int64_t{*minutes});
    }
    return fail(fmt::format("must be a time of day \"HH:MM\" from \"00:00\" to \"23:59\", not \"{}\"", text));
  case SettingType::day_zone:
    return parsed(parse_day_zone(text, error), error);
  case SettingType::secret:
    if (std::string problem = key_material_problem(text); !problem.empty()) {
      return fail(problem);
    }
    return ok(util::Secret(text));
  case SettingType::env_name:
    // Checked before use so that a key pasted here by mistake is never echoed
    // back as "the variable sk-... is not set".
    if (!is_env_name(text)) {
      return fail("is not an environment variable name (letters, digits and _); to give the key "
                  "itself, use \"key\"");
    }
    return ok(text);
  case SettingType::label:
    if (std::string problem = label_problem(text); !problem.empty()) {
      return fail(problem);
    }
    return ok(text);
  default:
    return ok(text);
  }
}

} // namespace

std::string describe_node_type(const toml::node& node) {
  switch (node.type()) {
  case toml::node_type::string:
    return "a string";
  case toml::node_type::integer:
    return "an integer";
  case toml::node_type::floating_point:
    return "a float";
  case toml::node_type::boolean:
    return "a boolean";
  case toml::node_type::array:
    return "an array";
  case toml::node_type::table:
    return "a table";
  default:
    return "a date or time";
  }
}

Decoded decode_setting(const Setting& setting, const toml::node& node, const std::string& base_dir) {
  switch (setting.type) {
  case SettingType::duration:
    return decode_duration(setting, node);
  case SettingType::size:
    return decode_size(setting, node);
  case SettingType::integer:
    return decode_integer(setting, node);
  case SettingType::count:
    return decode_count(setting, node);
  case SettingType::string_list:
    return decode_string_list(node, false);
  case SettingType::command:
    return decode_string_list(node, true);
  case SettingType::model_patterns:
    return decode_model_patterns(setting, node);
  case SettingType::file:
    return decode_file(node, base_dir);
  case SettingType::boolean:
    return decode_boolean(node);
  default:
    break;
  }
  const auto* text = node.as_string();
  if (!text) {
    return wrong_type(node, "a string");
  }
  return decode_string_kind(setting, text->get());
}

} // namespace keyshim::config
