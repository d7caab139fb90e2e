#pragma once
// The load driver's command line (bench_loadgen MODE --option value ...
// [-- COMMAND...]): one struct with every mode's settings, and its parser.
// Which mode reads which option: the comment at the top of loadgen.cpp.
#include <cstddef>
#include <string>
#include <vector>

namespace loadgen {

struct Options {
  std::string mode;
  int port = 0;
  std::string path = "/json";
  std::string method = "GET";
  size_t body = 0;
  int conc = 16;
  double seconds = 5;
  double warmup = 0.5;
  long count = 1000;
  long warmup_count = 50;
  int streams = 4;
  long events = 500;
  long gap_us = 2000;
  long size = 0;
  long hold_ms = 500;
  int silent = 600;
  int baseline = 20;
  double timeout = 60;
  std::vector<int> pids;
  long batch = 0;
  bool close = false;
  std::string tls_ca;
  std::vector<std::string> command; // first: what follows "--"
};

// Reads MODE and the options after it into *o. False when the command line
// is unusable: no mode, an option without a value, an unknown option (named
// on stderr), or a "--" with no command after it.
bool parse_options(int argc, char** argv, Options* o);

} // namespace loadgen
