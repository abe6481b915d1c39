// report.h: the table a chapter binary prints, and the CSV rows the plots are made from.
#pragma once
#include <string>
#include <vector>

#include "runner.h"

namespace attn {

// The commit the results come from: $FLASHSTEPS_COMMIT if set, else the commit of the build.
std::string commit_id();

void print_device_and_problem(const Problem& p);
// "checked: every output row (512 = B*H*Lq) ...", or how many of them and which.
void print_checked_rows(const Problem& p, const Selection& sel);
void print_table_header();
void print_row(const Result& r, const std::string& label = "");
void print_skip(const std::string& variant, const std::string& why);
// "    S = scale*QK^T 1.20 ms (40%) | softmax 0.60 ms (20%) | O = PV 1.20 ms (40%)"
void print_stages(const Result& r);

// The fixed schema of every CSV the project writes (results/README.md documents it).
extern const char* const kCsvHeader;
// A row's time is measured on a GPU, or is the CPU emulator's, or is modelled from the emulator's
// counters (the `kind` column): tools never mix them.
struct ModelledRow {
  std::string gpu;    // the modelled GPU's name (the device column)
  std::string bound;  // what bounds its time (the bound column)
};
std::string csv_row(const Result& r, const ModelledRow* modelled = nullptr);
// The fields of one CSV line of these files (double quotes protect commas).
std::vector<std::string> split_csv(const std::string& line);
// Throws UsageError unless rows can be appended to `path`: a name is given, it is no folder, its
// folder exists, it can be written, and it is new, empty or starts with kCsvHeader (a file that
// is not the project's, or is of another schema, is refused, not appended to). Creates nothing.
// Every command calls it before any work.
void check_csv_target(const std::string& path);
// Appends rows to `path`, writing the header first when the file is new or empty. Rows with no
// timing (reps 0) are refused: a row's times must be measured (or, for `modelled`, modelled) ones.
void append_csv(const std::string& path, const std::vector<Result>& rows, const ModelledRow* modelled = nullptr);

}  // namespace attn
