// command.h: how every command line of the project starts and ends: a parse error or bad input
// exits with code 2 and a message (an allocation that fails too), a failed CUDA call with code 1.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "errors.h"

namespace attn {

// Parses the command line; returns -1 to go on, or the exit code (0 after --help, 2 on an error).
inline int parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s\nrun with --help for the options\n", e.what());
    return 2;
  }
  return -1;
}

// Runs a command's body, turning its exceptions into exit codes.
template <class F>
int guarded(F&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const CudaError& e) {
    std::fprintf(stderr, "CUDA error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory: the host could not allocate what the problem needs; try a smaller "
                         "problem (-n, -b, -H)\n");
    return 2;
  } catch (const std::system_error& e) {  // a thread the emulator could not start, under a limit
    const bool resources = e.code() == std::errc::resource_unavailable_try_again || e.code() == std::errc::not_enough_memory;
    std::fprintf(stderr, "error: %s%s\n", resources ? "out of memory or threads: " : "", e.what());
    return resources ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

// The variants a command was given by name, in that order, or the whole registry when none was (a
// registry of variants with info.name: backward's, decoding's); an unknown name is a UsageError that
// lists the known ones. what: "backward variant".
template <class Registry, class Find>
auto select_named(const Registry& registry, Find find, const std::vector<std::string>& names, const std::string& what) {
  using V = typename Registry::value_type;
  std::vector<const V*> chosen;
  if (names.empty())
    for (const V& v : registry) chosen.push_back(&v);
  for (const std::string& n : names) {
    const V* v = find(n);
    if (!v) {
      std::string known;
      for (const V& k : registry) known += (known.empty() ? "" : ", ") + k.info.name;
      throw UsageError("unknown " + what + " \"" + n + "\" (known: " + known + ")");
    }
    chosen.push_back(v);
  }
  return chosen;
}

}  // namespace attn
