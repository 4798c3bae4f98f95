#pragma once

namespace hopattn::cli {

int run_info();
int run_check_command(int argc, char** argv);  // argv[0] == "check"

}  // namespace hopattn::cli
