#include "cli/app.hpp"

#include <ctime>

int main(int argc, char** argv) {
  ::tzset(); // before any thread: see ShimServer's constructor
  return keyshim::cli::run(argc, argv);
}
