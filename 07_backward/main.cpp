// The chapter's binary: the fastest forward, then the backward steps (common/harness/backward/cli.cpp).
#include "harness/cli.h"

int main(int argc, char** argv) { return attn::backward_main(argc, argv, FLASHSTEPS_CHAPTER); }
