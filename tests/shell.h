// shell.h: a command line run as a user would, for the tests of the command lines.
#pragma once
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

struct Outcome {
  int code;
  std::string output;
};
// A shell command line, its exit code and its output (stdout and stderr).
inline Outcome shell(const std::string& command) {
  const std::string cmd = "{ " + command + "; } 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  Outcome o{-1, ""};
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), f)) o.output.append(buf.data(), n);
  const int status = pclose(f);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}
