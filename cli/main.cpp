// The one trainsim executable: every subcommand lives in cli/ and calls the libraries.
#include "cli/app.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // A simulation allocates and frees task graphs of up to tens of MB per plan (Llama 3.1 405B at
  // PP 128 with 1,024 micro-batches: 522k tasks). Above glibc's default threshold each would be
  // mapped and unmapped again, paying its first-touch page faults every time: a fifth of a deep
  // search's time. Kept in the heap (up to the largest threshold glibc accepts, 32 MiB) and not
  // given back to the kernel, the next plan reuses the pages.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
  return trainsim::run_cli(argc, argv);
}
