// lib/data/csv.cpp
// CSV records in Python's default dialect, which SpeechBrain's manifests use.
#include "data/csv.h"

#include "core/error.h"

namespace masr::data {

CsvReader::CsvReader(std::istream& in, std::string name, bool skip_initial_space)
    : in_(in), name_(std::move(name)), skip_initial_space_(skip_initial_space) {}

bool CsvReader::next(CsvRecord& record) {
  std::string line;
  // Skip blank lines, as Python's csv module does.
  do {
    if (!std::getline(in_, line)) return false;
    ++line_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
  } while (line.empty());

  record.fields.clear();
  record.line = line_;
  std::string field;
  bool in_quotes = false, after_quote = false, at_field_start = true;
  size_t i = 0;
  while (true) {
    if (i == line.size()) {
      if (!in_quotes) break;
      // A quoted field continues on the next line.
      if (!std::getline(in_, line)) {
        throw_input_error(name_ + ":" + std::to_string(record.line) +
                          ": unterminated quoted field (a '\"' is missing)");
      }
      ++line_;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      field += '\n';
      i = 0;
      continue;
    }
    const char c = line[i++];
    if (in_quotes) {
      if (c != '"') {
        field += c;
      } else if (i < line.size() && line[i] == '"') {
        field += '"';
        ++i;
      } else {
        in_quotes = false;
        after_quote = true;
      }
    } else if (c == ',') {
      record.fields.push_back(std::move(field));
      field.clear();
      after_quote = false;
      at_field_start = true;
      continue;
    } else if (at_field_start && c == ' ' && skip_initial_space_) {
      continue;
    } else if (at_field_start && c == '"') {
      in_quotes = true;
    } else if (after_quote) {
      throw_input_error(name_ + ":" + std::to_string(line_) +
                        ": text after a closing quote in field " +
                        std::to_string(record.fields.size() + 1));
    } else {
      field += c;
    }
    at_field_start = false;
  }
  record.fields.push_back(std::move(field));
  return true;
}

std::string csv_quote_minimal(const std::string& field) {
  // Python's QUOTE_MINIMAL quotes delimiters, quotes and line breaks; a leading space is quoted
  // too, since SpeechBrain reads with skipinitialspace and would drop it.
  const bool leading_space = !field.empty() && field.front() == ' ';
  if (!leading_space && field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace masr::data
