#pragma once

namespace keyshim::cli {

// Parse the command line, run the chosen subcommand, return the exit code:
// 0 ok, 1 bad configuration or runtime failure, 2 usage error.
int run(int argc, char** argv);

} // namespace keyshim::cli
