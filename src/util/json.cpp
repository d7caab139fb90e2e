// The Json value and its writer. Writing goes through nlohmann-json's
// serializer, which escapes and checks UTF-8 the way every JSON reader expects.
#include "util/json.hpp"

#include <nlohmann/json.hpp>

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

Json Json::make_unsigned(std::uint64_t value) {
  Json json = make_number(static_cast<double>(value));
  json.m_unsigned = value;
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

Json& Json::push_back(Json item) {
  if (is_null()) {
    m_type = Type::array;
  }
  if (is_array()) {
    m_items.push_back(std::move(item));
  }
  return *this;
}

Json& Json::set(std::string name, Json value) {
  if (is_object()) {
    for (auto& [key, existing] : m_members) {
      if (key == name) {
        existing = std::move(value);
        return *this;
      }
    }
  }
  return add(std::move(name), std::move(value));
}

Json& Json::add(std::string name, Json value) {
  if (is_null()) {
    m_type = Type::object;
  }
  if (is_object()) {
    m_members.emplace_back(std::move(name), std::move(value));
  }
  return *this;
}

namespace {

using Ordered = nlohmann::ordered_json;

// Doubles hold every integer below 2^53 exactly; those print as integers.
constexpr double k_max_exact_integer = 9007199254740992.0;

Ordered to_nlohmann(const Json& json) {
  switch (json.type()) {
  case Json::Type::null:
    return nullptr;
  case Json::Type::boolean:
    return json.as_bool();
  case Json::Type::number: {
    if (std::optional<std::uint64_t> exact = json.as_unsigned()) {
      return *exact;
    }
    double value = json.as_number();
    if (std::trunc(value) == value && std::fabs(value) < k_max_exact_integer) {
      return static_cast<std::int64_t>(value);
    }
    return value; // NaN and infinities dump as null
  }
  case Json::Type::string:
    return json.as_string();
  case Json::Type::array: {
    Ordered out = Ordered::array();
    for (const Json& item : json.items()) {
      out.push_back(to_nlohmann(item));
    }
    return out;
  }
  case Json::Type::object: {
    Ordered out = Ordered::object();
    // ordered_json's object is a vector of pairs; appending to it directly
    // keeps duplicate names (as parsed) and skips a linear search per member.
    auto& members = static_cast<Ordered::object_t::Container&>(out.get_ref<Ordered::object_t&>());
    for (const auto& [key, value] : json.members()) {
      members.emplace_back(key, to_nlohmann(value));
    }
    return out;
  }
  }
  return nullptr;
}

} // namespace

std::string Json::dump() const {
  // `replace` writes U+FFFD for invalid UTF-8 instead of throwing;
  // ensure_ascii=false keeps valid UTF-8 as it is.
  return to_nlohmann(*this).dump(-1, ' ', false, Ordered::error_handler_t::replace);
}

} // namespace keyshim::util
