#include "config/text_helpers.hpp"

#include <cstring>

namespace keyshim::config {

std::string lowercase_first(std::string text) {
  if (!text.empty() && text[0] >= 'A' && text[0] <= 'Z') {
    text[0] = static_cast<char>(text[0] - 'A' + 'a');
  }
  return text;
}

std::string errno_text(int errnum) {
  return lowercase_first(std::strerror(errnum));
}

} // namespace keyshim::config
