#include "cli/commands.h"

int main(int argc, char** argv) { return mk::cli::Main(argc, argv); }
