// flashsteps: the whole book in one binary.
//   flashsteps [tour] [options]   every chapter's best variant on one problem (the README's main job)
//   flashsteps run [options]      every variant of every chapter (--variant to pick)
//   flashsteps bench --csv FILE   the benchmark sweep (results/README.md)
//   flashsteps backward [options] the fastest forward, then every backward variant (chapter 07)
#include <cstring>

#include "cli.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "run") == 0) return attn::chapter_main(argc - 1, argv + 1, "");
  if (argc > 1 && std::strcmp(argv[1], "tour") == 0) return attn::tour_main(argc - 1, argv + 1);
  if (argc > 1 && std::strcmp(argv[1], "bench") == 0) return attn::bench_main(argc - 1, argv + 1);
  if (argc > 1 && std::strcmp(argv[1], "backward") == 0) return attn::backward_main(argc - 1, argv + 1, "");
  return attn::tour_main(argc, argv);
}
