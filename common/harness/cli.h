// cli.h: the command lines of the chapter binaries and of `flashsteps`.
#pragma once
#include <string>

namespace attn {

// A chapter binary: the chapter's variants on one problem (chapter "": every chapter's).
// Exit code 0 when every variant passed its check, 1 when one failed or CUDA failed, 2 for bad input.
// profile_only: `flashsteps profile`, each variant run once with the counters on (profile.h).
int chapter_main(int argc, char** argv, const std::string& chapter, bool profile_only = false);
// `flashsteps tour`: every chapter's best variant on one problem, with its speedup over chapter 01.
int tour_main(int argc, char** argv);
// `flashsteps bench`: the benchmark runner (bench.cpp).
int bench_main(int argc, char** argv);

}  // namespace attn
