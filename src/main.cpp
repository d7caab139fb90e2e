#include "cli/app.hpp"

int main(int argc, char** argv) {
  return keyshim::cli::run(argc, argv);
}
