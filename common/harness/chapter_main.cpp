// The main() of every chapter binary; FLASHSTEPS_CHAPTER names the chapter.
#include "cli.h"

int main(int argc, char** argv) { return attn::chapter_main(argc, argv, FLASHSTEPS_CHAPTER); }
