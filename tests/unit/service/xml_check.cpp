#include "xml_check.hpp"

#include <cctype>
#include <string>

namespace keyshim::test {
namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// Checks every '&' starts a known entity and there is no raw '<'.
std::string text_problem(std::string_view text, std::size_t offset) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<') {
      return "raw '<' in text at " + std::to_string(offset + i);
    }
    if (text[i] != '&') {
      continue;
    }
    std::size_t end = text.find(';', i);
    if (end == std::string_view::npos) {
      return "unterminated entity at " + std::to_string(offset + i);
    }
    std::string_view entity = text.substr(i + 1, end - i - 1);
    bool numeric = entity.size() > 1 && entity[0] == '#';
    if (!numeric && entity != "amp" && entity != "lt" && entity != "gt" && entity != "quot" &&
        entity != "apos") {
      return "unknown entity &" + std::string(entity) + "; at " + std::to_string(offset + i);
    }
  }
  return {};
}

std::string unescape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out += text[i];
      continue;
    }
    std::size_t end = text.find(';', i);
    std::string_view entity = text.substr(i + 1, end - i - 1);
    if (entity == "amp") {
      out += '&';
    } else if (entity == "lt") {
      out += '<';
    } else if (entity == "gt") {
      out += '>';
    } else if (entity == "quot") {
      out += '"';
    } else if (entity == "apos") {
      out += '\'';
    }
    i = end;
  }
  return out;
}

std::string_view after_key(std::string_view doc, std::string_view key) {
  std::string marker = "<key>" + std::string(key) + "</key>";
  std::size_t at = doc.find(marker);
  return at == std::string_view::npos ? std::string_view{} : doc.substr(at + marker.size());
}

} // namespace

std::string xml_problem(std::string_view doc) {
  std::vector<std::string> open;
  int roots = 0;
  std::size_t i = 0;
  while (i < doc.size()) {
    std::size_t lt = doc.find('<', i);
    std::string_view text = doc.substr(i, lt == std::string_view::npos ? std::string_view::npos : lt - i);
    if (open.empty() && text.find_first_not_of(" \t\r\n") != std::string_view::npos) {
      return "text outside the root element at " + std::to_string(i);
    }
    if (std::string problem = text_problem(text, i); !problem.empty()) {
      return problem;
    }
    if (lt == std::string_view::npos) {
      break;
    }
    std::string_view rest = doc.substr(lt);
    if (rest.starts_with("<!--")) {
      std::size_t end = doc.find("-->", lt + 4);
      if (end == std::string_view::npos) {
        return "unterminated comment at " + std::to_string(lt);
      }
      if (doc.substr(lt + 4, end - lt - 4).find("--") != std::string_view::npos) {
        return "\"--\" inside a comment at " + std::to_string(lt);
      }
      i = end + 3;
      continue;
    }
    if (rest.starts_with("<?")) {
      std::size_t end = doc.find("?>", lt);
      if (end == std::string_view::npos) {
        return "unterminated processing instruction at " + std::to_string(lt);
      }
      i = end + 2;
      continue;
    }
    if (rest.starts_with("<!DOCTYPE")) {
      if (roots > 0) {
        return "DOCTYPE after the root element";
      }
      std::size_t end = doc.find('>', lt);
      i = end + 1;
      continue;
    }
    std::size_t gt = doc.find('>', lt);
    if (gt == std::string_view::npos) {
      return "unterminated tag at " + std::to_string(lt);
    }
    std::string_view tag = doc.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    bool closing = !tag.empty() && tag.front() == '/';
    bool self_closing = !tag.empty() && tag.back() == '/';
    std::string_view body =
        tag.substr(closing ? 1 : 0, tag.size() - (closing ? 1 : 0) - (self_closing ? 1 : 0));
    std::size_t name_end = 0;
    while (name_end < body.size() && is_name_char(body[name_end])) {
      ++name_end;
    }
    std::string name(body.substr(0, name_end));
    if (name.empty()) {
      return "tag without a name at " + std::to_string(lt);
    }
    if (closing) {
      if (open.empty() || open.back() != name) {
        return "</" + name + "> does not close " +
               (open.empty() ? std::string("anything") : "<" + open.back() + ">");
      }
      open.pop_back();
      continue;
    }
    // Attributes: name="value" pairs; values must be valid text.
    std::string_view attributes = body.substr(name_end);
    if (std::string problem = text_problem(attributes, lt); !problem.empty()) {
      return problem;
    }
    if (open.empty()) {
      if (++roots > 1) {
        return "second root element <" + name + ">";
      }
    }
    if (!self_closing) {
      open.push_back(name);
    }
  }
  if (!open.empty()) {
    return "<" + open.back() + "> is never closed";
  }
  if (roots != 1) {
    return "no root element";
  }
  return {};
}

std::vector<std::string> plist_string_array(std::string_view doc, std::string_view key) {
  std::vector<std::string> values;
  std::string_view rest = after_key(doc, key);
  std::size_t end = rest.find("</array>");
  rest = rest.substr(0, end);
  for (std::size_t at = rest.find("<string>"); at != std::string_view::npos; at = rest.find("<string>", at)) {
    at += 8;
    std::size_t close = rest.find("</string>", at);
    values.push_back(unescape(rest.substr(at, close - at)));
  }
  return values;
}

std::string plist_string(std::string_view doc, std::string_view key) {
  std::string_view rest = after_key(doc, key);
  std::size_t at = rest.find("<string>");
  if (at == std::string_view::npos) {
    return {};
  }
  at += 8;
  return unescape(rest.substr(at, rest.find("</string>", at) - at));
}

} // namespace keyshim::test
