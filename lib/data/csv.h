// lib/data/csv.h
// A small CSV reader and writer with Python's csv-module dialect (`"` quoting, `""` escapes,
// QUOTE_MINIMAL when writing), reporting the line on which each record starts.
#pragma once

#include <istream>
#include <string>
#include <vector>

namespace masr::data {

struct CsvRecord {
  std::vector<std::string> fields;
  size_t line = 0;  // 1-based line where the record starts
};

class CsvReader {
 public:
  // `name` is used in error messages; `skip_initial_space` drops spaces after a delimiter.
  CsvReader(std::istream& in, std::string name, bool skip_initial_space = true);

  // Reads the next record; false at end of input. Blank lines are skipped. Throws an input error
  // naming the file and line for an unterminated quote or text after a closing quote.
  bool next(CsvRecord& record);

 private:
  std::istream& in_;
  std::string name_;
  bool skip_initial_space_;
  size_t line_ = 0;
};

// One field as Python's csv.writer with QUOTE_MINIMAL writes it.
std::string csv_quote_minimal(const std::string& field);

}  // namespace masr::data
