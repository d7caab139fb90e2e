// bench_loadgen's command line (loadgen_options.hpp): MODE, `--name value`
// pairs, and for `first` the command after "--". Values are read with atoi,
// atol and atof, as they always were: a bad number is 0, not an error.
#include "loadgen_options.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace loadgen {

namespace {

// "A,B,...": each positive pid, in order; anything else is skipped.
void parse_pids(const char* v, std::vector<int>* pids) {
  for (const char* p = v; *p != '\0';) {
    int pid = atoi(p);
    if (pid > 0) {
      pids->push_back(pid);
    }
    const char* comma = strchr(p, ',');
    if (comma == nullptr) {
      break;
    }
    p = comma + 1;
  }
}

// Sets the option named k to v. False when k names no option.
bool set_option(const std::string& k, const char* v, Options* o) {
  if (k == "--port") {
    o->port = atoi(v);
  } else if (k == "--path") {
    o->path = v;
  } else if (k == "--method") {
    o->method = v;
  } else if (k == "--body") {
    o->body = static_cast<size_t>(atol(v));
  } else if (k == "--conc") {
    o->conc = atoi(v);
  } else if (k == "--seconds") {
    o->seconds = atof(v);
  } else if (k == "--warmup") {
    o->warmup = atof(v);
  } else if (k == "--count") {
    o->count = atol(v);
  } else if (k == "--warmup-count") {
    o->warmup_count = atol(v);
  } else if (k == "--streams") {
    o->streams = atoi(v);
  } else if (k == "--events") {
    o->events = atol(v);
  } else if (k == "--gap-us") {
    o->gap_us = atol(v);
  } else if (k == "--size") {
    o->size = atol(v);
  } else if (k == "--hold-ms") {
    o->hold_ms = atol(v);
  } else if (k == "--silent") {
    o->silent = atoi(v);
  } else if (k == "--baseline") {
    o->baseline = atoi(v);
  } else if (k == "--batch") {
    o->batch = atol(v);
  } else if (k == "--close") {
    o->close = atoi(v) != 0;
  } else if (k == "--tls-ca") {
    o->tls_ca = v;
  } else if (k == "--timeout") {
    o->timeout = atof(v);
  } else if (k == "--pids") {
    parse_pids(v, &o->pids);
  } else {
    return false;
  }
  return true;
}

} // namespace

bool parse_options(int argc, char** argv, Options* o) {
  if (argc < 2) {
    return false;
  }
  o->mode = argv[1];
  for (int i = 2; i < argc; i++) {
    std::string k = argv[i];
    if (k == "--") {
      o->command.assign(argv + i + 1, argv + argc);
      return !o->command.empty();
    }
    if (i + 1 >= argc) {
      return false;
    }
    const char* v = argv[++i];
    if (!set_option(k, v, o)) {
      fprintf(stderr, "loadgen: unknown option %s\n", k.c_str());
      return false;
    }
  }
  return true;
}

} // namespace loadgen
