// vecbench: the executable. The command line and the commands are in src/app/ (app/cli.hpp).
#include "vecbench/app/cli.hpp"

int main(int argc, char** argv) { return vecbench::run_cli(argc, argv); }
