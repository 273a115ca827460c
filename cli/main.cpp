// The one trainsim executable: every subcommand lives in cli/ and calls the libraries.
#include "cli/app.hpp"

int main(int argc, char** argv) { return trainsim::run_cli(argc, argv); }
