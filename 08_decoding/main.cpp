// The chapter's binary: its decoding steps on one problem (common/harness/decode/cli.cpp).
#include "harness/cli.h"

int main(int argc, char** argv) { return attn::decode_main(argc, argv, FLASHSTEPS_CHAPTER); }
