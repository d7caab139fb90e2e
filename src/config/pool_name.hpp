#pragma once
// What may name a pool. A name becomes the first segment of request paths
// (/NAME/...), so it must need no escaping and must not take a path that
// keyshim answers itself or that tools send to the default pool. Pure.
#include <string>
#include <string_view>

namespace keyshim::config {

// Why `name` cannot name a [pools.NAME] table, with the fix, or "".
std::string pool_name_problem(std::string_view name);

// Whether `name` reads as an API version, the first segment of the paths
// SDKs and CLIs send to a base URL without one: `v` and digits, then any of
// `.DIGITS` (v1.0), `pDIGITS` (v1p1beta1), `alpha` or `beta` with optional
// digits (v1beta, v1alpha, v1beta1, v2alpha3).
bool is_api_version_name(std::string_view name);

} // namespace keyshim::config
