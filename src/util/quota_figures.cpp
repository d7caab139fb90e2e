#include "util/quota_figures.hpp"

namespace keyshim::util {

const char* to_string(QuotaKind kind) {
  switch (kind) {
  case QuotaKind::requests:
    return "requests";
  case QuotaKind::tokens:
    return "tokens";
  case QuotaKind::input_tokens:
    return "input_tokens";
  case QuotaKind::output_tokens:
    return "output_tokens";
  case QuotaKind::unified:
    break;
  }
  return "unified";
}

} // namespace keyshim::util
