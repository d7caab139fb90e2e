#include "util/json.hpp"

#include "util/log.hpp"

#include <fmt/format.h>

#include <cmath>

namespace keyshim::util {

Json Json::make_bool(bool value) {
  Json json;
  json.m_type = Type::boolean;
  json.m_bool = value;
  return json;
}

Json Json::make_number(double value) {
  Json json;
  json.m_type = Type::number;
  json.m_number = value;
  return json;
}

Json Json::make_string(std::string value) {
  Json json;
  json.m_type = Type::string;
  json.m_string = std::move(value);
  return json;
}

Json Json::make_array(Array items) {
  Json json;
  json.m_type = Type::array;
  json.m_items = std::move(items);
  return json;
}

Json Json::make_object(Object members) {
  Json json;
  json.m_type = Type::object;
  json.m_members = std::move(members);
  return json;
}

const std::string& Json::as_string() const {
  static const std::string k_empty;
  return is_string() ? m_string : k_empty;
}

const Json::Array& Json::items() const {
  static const Array k_empty;
  return is_array() ? m_items : k_empty;
}

const Json::Object& Json::members() const {
  static const Object k_empty;
  return is_object() ? m_members : k_empty;
}

const Json* Json::find(std::string_view name) const {
  for (const auto& [key, value] : members()) {
    if (key == name) {
      return &value;
    }
  }
  return nullptr;
}

std::optional<std::string> Json::string_at(std::string_view name) const {
  const Json* value = find(name);
  if (value == nullptr || !value->is_string()) {
    return std::nullopt;
  }
  return value->m_string;
}

void Json::push_back(Json item) {
  if (is_null()) {
    m_type = Type::array;
  }
  if (is_array()) {
    m_items.push_back(std::move(item));
  }
}

void Json::set(std::string name, Json value) {
  if (is_null()) {
    m_type = Type::object;
  }
  if (!is_object()) {
    return;
  }
  for (auto& [key, existing] : m_members) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  m_members.emplace_back(std::move(name), std::move(value));
}

namespace {

void dump_into(const Json& json, std::string& out) {
  switch (json.type()) {
  case Json::Type::null:
    out += "null";
    return;
  case Json::Type::boolean:
    out += json.as_bool() ? "true" : "false";
    return;
  case Json::Type::number: {
    double value = json.as_number();
    // JSON has no NaN or infinity; null is the conventional stand-in.
    if (!std::isfinite(value)) {
      out += "null";
    } else if (value == std::trunc(value) && std::fabs(value) < 9e15) {
      out += fmt::format("{}", static_cast<long long>(value));
    } else {
      out += fmt::format("{}", value);
    }
    return;
  }
  case Json::Type::string:
    out += '"';
    out += json_escape(json.as_string());
    out += '"';
    return;
  case Json::Type::array: {
    out += '[';
    bool first = true;
    for (const Json& item : json.items()) {
      if (!first) {
        out += ',';
      }
      first = false;
      dump_into(item, out);
    }
    out += ']';
    return;
  }
  case Json::Type::object: {
    out += '{';
    bool first = true;
    for (const auto& [key, value] : json.members()) {
      if (!first) {
        out += ',';
      }
      first = false;
      out += '"';
      out += json_escape(key);
      out += "\":";
      dump_into(value, out);
    }
    out += '}';
    return;
  }
  }
}

} // namespace

std::string Json::dump() const {
  std::string out;
  dump_into(*this, out);
  return out;
}

} // namespace keyshim::util
