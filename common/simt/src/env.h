// env.h: the emulator's settings from the environment (notes/emulator.md's table). A number is
// whole and within its range, or the setting's default when unset; anything else ends the program
// with exit code 2 and a sentence before any kernel runs, as SIMT_ORDER's and SIMT_GPU's do: a
// value read with atoi would wrap, or fall back to 0 without a word.
#pragma once
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace simt::detail {

inline long env_number(const char* name, long fallback, long lo, long hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (*end || errno == ERANGE || n < lo || n > hi) {
    std::fprintf(stderr, "simt: %s=%s is not a whole number from %ld to %ld\n", name, v, lo, hi);
    std::exit(2);
  }
  return n;
}

}  // namespace simt::detail
