// flashsteps: the whole book in one binary.
//   flashsteps [tour] [options]   every chapter's best variant on one problem (the README's main job)
//   flashsteps run [options]      every variant of every chapter (--variant to pick)
//   flashsteps bench --csv FILE   the benchmark sweep (results/README.md)
//   flashsteps profile [options]  every variant once with the emulator's counters on: what a GPU
//                                 profiler would count, and a modelled GPU time (a counters build)
//   flashsteps backward [options] the fastest forward, then every backward variant (chapter 07)
//   flashsteps decode [options]   every decoding variant on one KV-cache problem (chapter 08)
//   flashsteps support [options]  which chapter runs on which GPU of common/gpus/gpus.h
#include <cstdio>
#include <cstring>

#include "cli.h"

namespace {
struct Command {
  const char* name;
  int (*main)(int, char**);
  const char* what;
};
int run_main(int argc, char** argv) { return attn::chapter_main(argc, argv, ""); }
int profile_main(int argc, char** argv) { return attn::chapter_main(argc, argv, "", true); }
int backward_cmd(int argc, char** argv) { return attn::backward_main(argc, argv, ""); }
int decode_cmd(int argc, char** argv) { return attn::decode_main(argc, argv, ""); }

// One line per command: `flashsteps --help` lists them from here.
const Command kCommands[] = {
    {"tour", attn::tour_main, "every chapter's best variant on one problem, its speedup over chapter 01 (the default)"},
    {"run", run_main, "any variant of any chapter on one problem (-v NAME, --list), per-kernel breakdown"},
    {"bench", attn::bench_main, "the benchmark sweep, one CSV row per measurement (--csv FILE; results/README.md)"},
    {"profile", profile_main, "every variant once with the emulator's counters: what a profiler would count, and a "
                              "modelled GPU time (a counters build)"},
    {"backward", backward_cmd, "chapter 07: the fastest forward, then every backward variant (dQ, dK, dV)"},
    {"decode", decode_cmd, "chapter 08: new tokens against a KV cache (GQA, split-KV, pages), every decoding variant"},
    {"support", attn::support_main, "which chapter runs on which GPU (T4 to B200): runs, adapts, a stand-in step, or why not"},
};

int usage() {
  std::printf("flashsteps: scaled-dot-product attention, chapter by chapter, checked against an fp64 reference and "
              "timed.\n\nUsage: flashsteps [COMMAND] [OPTIONS]\n\nCommands:\n");
  for (const Command& c : kCommands) std::printf("  %-8s %s\n", c.name, c.what);
  std::printf("\nWithout a command, the options go to tour. `flashsteps COMMAND --help` lists a command's options.\n"
              "Each chapter also has its own binary, build/bin/<chapter> (01_naive_attention, ...), with run's options.\n");
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
                   std::strcmp(argv[1], "help") == 0))
    return usage();
  if (argc > 1)
    for (const Command& c : kCommands)
      if (std::strcmp(argv[1], c.name) == 0) return c.main(argc - 1, argv + 1);
  if (argc > 1 && argv[1][0] != '-') {
    std::fprintf(stderr, "error: unknown command \"%s\": use", argv[1]);
    for (const Command& c : kCommands) std::fprintf(stderr, " %s", c.name);
    std::fprintf(stderr, " (flashsteps --help)\n");
    return 2;
  }
  return attn::tour_main(argc, argv);
}
