#pragma once
// A small XML well-formedness check for the launchd plist, so the test needs
// no XML library or python: balanced and matching tags, one root element,
// comments without "--", and only the five predefined or numeric entities.
// Also a reader for a plist <array> of <string>s.
#include <string>
#include <string_view>
#include <vector>

namespace keyshim::test {

// "" when `doc` is well-formed; otherwise what is wrong and where.
std::string xml_problem(std::string_view doc);

// The unescaped <string> values of the <array> that follows <key>KEY</key>.
std::vector<std::string> plist_string_array(std::string_view doc, std::string_view key);

// The unescaped value of the <string> that follows <key>KEY</key>.
std::string plist_string(std::string_view doc, std::string_view key);

} // namespace keyshim::test
