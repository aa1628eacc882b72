// lib/data/manifest.cpp
// Reading SpeechBrain CSVs, Kaldi data folders and path lists into ManifestRows; writing SB CSVs.
#include "data/manifest.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "data/csv.h"

namespace masr::data {
namespace {

namespace fs = std::filesystem;

std::ifstream open_input(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_io_error(what + " '" + path + "': cannot open the file");
  return in;
}

// Transcripts must be UTF-8 (SpeechBrain reads CSVs as UTF-8 text and fails on other bytes);
// a Latin-1 file would otherwise train on garbage pieces. Names the first bad byte.
void check_utf8(const std::string& text, const std::string& where, const std::string& what) {
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const size_t length = lead < 0x80           ? 1
                          : (lead >> 5) == 0x6  ? 2
                          : (lead >> 4) == 0xE  ? 3
                          : (lead >> 3) == 0x1E ? 4
                                                : 0;
    bool ok =
        length > 0 && i + length <= text.size() && lead != 0xC0 && lead != 0xC1 && lead <= 0xF4;
    for (size_t k = 1; ok && k < length; ++k) {
      ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    }
    if (!ok) {
      char byte[8];
      std::snprintf(byte, sizeof(byte), "0x%02X", lead);
      throw_input_error(where + ": the " + what + " is not valid UTF-8 (byte " + byte +
                        " at offset " + std::to_string(i) + "); convert the file to UTF-8");
    }
    i += length;
  }
}

bool is_var_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
}

// SpeechBrain's `\$([\w.]+)` substitution.
std::string substitute(const std::string& value, const Replacements& replacements,
                       const std::string& where) {
  if (value.find('$') == std::string::npos) return value;
  std::string out;
  for (size_t i = 0; i < value.size();) {
    size_t end = i + 1;
    while (value[i] == '$' && end < value.size() && is_var_char(value[end])) ++end;
    if (value[i] != '$' || end == i + 1) {
      out += value[i++];
      continue;
    }
    const std::string name = value.substr(i + 1, end - i - 1);
    const auto found = replacements.find(name);
    if (found == replacements.end()) {
      throw_input_error(where + ": '" + value + "' needs a value for $" + name +
                        " (pass it as a replacement, e.g. data_root)");
    }
    out += found->second;
    i = end;
  }
  return out;
}

double parse_duration(const std::string& text, const std::string& where) {
  double value = 0.0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  while (begin < end && *begin == ' ') ++begin;
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value) || value < 0.0 || begin == end) {
    throw_input_error(where + ": duration '" + text + "' is not a non-negative number of seconds");
  }
  return value;
}

std::string format_double(double value) {
  char buffer[64];
  const auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return ec == std::errc() ? std::string(buffer, ptr) : std::to_string(value);
}

// Column positions of a SpeechBrain CSV header.
struct CsvColumns {
  int id = -1, duration = -1, wav = -1, spk_id = -1, wrd = -1;
  std::vector<int> extra;
};

CsvColumns map_header(const std::vector<std::string>& header, const std::string& where,
                      Manifest& manifest) {
  CsvColumns c;
  std::set<std::string> seen;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string& name = header[i];
    if (!seen.insert(name).second) throw_input_error(where + ": column '" + name + "' repeated");
    const int index = static_cast<int>(i);
    if (name == "ID")
      c.id = index;
    else if (name == "duration")
      c.duration = index;
    else if (name == "wav")
      c.wav = index;
    else if (name == "spk_id")
      c.spk_id = index;
    else if (name == "wrd")
      c.wrd = index;
    else {
      c.extra.push_back(index);
      manifest.extra_columns.push_back(name);
    }
  }
  for (const auto& [index, name] :
       {std::pair{c.id, "ID"}, std::pair{c.duration, "duration"}, std::pair{c.wav, "wav"}}) {
    if (index < 0) {
      throw_input_error(where + ": the header has no '" + std::string(name) +
                        "' column (a SpeechBrain CSV starts with ID,duration,wav,spk_id,wrd)");
    }
  }
  return c;
}

}  // namespace

const std::string* ManifestRow::find_extra(const std::string& column) const {
  for (const auto& [name, value] : extra) {
    if (name == column) return &value;
  }
  return nullptr;
}

double Manifest::total_duration() const {
  double total = 0.0;
  for (const auto& row : rows) total += row.duration;
  return total;
}

Manifest read_speechbrain_csv(const std::string& path, const Replacements& replacements) {
  std::ifstream in = open_input(path, "manifest");
  CsvReader reader(in, path);
  Manifest manifest;
  manifest.origin = path;
  CsvRecord header;
  if (!reader.next(header)) {
    throw_input_error(path + ": empty file; expected a header ID,duration,wav,spk_id,wrd");
  }
  const CsvColumns c =
      map_header(header.fields, path + ":" + std::to_string(header.line), manifest);
  std::unordered_set<std::string> ids;
  CsvRecord record;
  while (reader.next(record)) {
    const std::string where = path + ":" + std::to_string(record.line);
    if (record.fields.size() != header.fields.size()) {
      throw_input_error(where + ": " + std::to_string(record.fields.size()) +
                        " fields, but the header has " + std::to_string(header.fields.size()) +
                        " columns");
    }
    for (auto& field : record.fields) field = substitute(field, replacements, where);
    ManifestRow row;
    row.source = where;
    row.id = record.fields[c.id];
    if (row.id.empty()) throw_input_error(where + ": empty ID");
    if (!ids.insert(row.id).second) throw_input_error(where + ": duplicate ID '" + row.id + "'");
    row.duration = parse_duration(record.fields[c.duration], where);
    row.wav = record.fields[c.wav];
    if (c.spk_id >= 0) row.spk_id = record.fields[c.spk_id];
    if (c.wrd >= 0) row.wrd = record.fields[c.wrd];
    check_utf8(row.wrd, where, "transcript (wrd)");
    for (size_t k = 0; k < c.extra.size(); ++k) {
      row.extra.emplace_back(manifest.extra_columns[k], record.fields[c.extra[k]]);
    }
    manifest.rows.push_back(std::move(row));
  }
  if (manifest.rows.empty()) throw_input_error(path + ": a header but no rows");
  return manifest;
}

namespace {

// Reads "<key> <rest of line>" lines of a Kaldi table into key -> value, with file:line for each.
struct KaldiTable {
  std::unordered_map<std::string, std::pair<std::string, std::string>> entries;  // value, where
  std::vector<std::string> order;
};

KaldiTable read_kaldi_table(const std::string& path, bool value_required) {
  std::ifstream in = open_input(path, "Kaldi table");
  KaldiTable table;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = path + ":" + std::to_string(n);
    const size_t key_start = line.find_first_not_of(" \t");
    if (key_start == std::string::npos) continue;
    const size_t key_end = line.find_first_of(" \t", key_start);
    const std::string key = line.substr(key_start, key_end - key_start);
    std::string value;
    if (key_end != std::string::npos) {
      const size_t value_start = line.find_first_not_of(" \t", key_end);
      const size_t value_end = line.find_last_not_of(" \t");
      if (value_start != std::string::npos)
        value = line.substr(value_start, value_end - value_start + 1);
    }
    if (value_required && value.empty()) throw_input_error(where + ": '" + key + "' has no value");
    if (!table.entries.emplace(key, std::make_pair(value, where)).second) {
      throw_input_error(where + ": duplicate ID '" + key + "'");
    }
    table.order.push_back(key);
  }
  if (table.order.empty()) throw_input_error(path + ": empty file");
  return table;
}

}  // namespace

Manifest read_kaldi_dir(const std::string& dir) {
  const fs::path root(dir);
  if (fs::exists(root / "segments")) {
    throw_input_error("Kaldi data dir '" + dir +
                      "': has a 'segments' file, which is not supported (wav.scp would list "
                      "recordings, not utterances); cut the segments into files first");
  }
  if (!fs::exists(root / "wav.scp")) throw_input_error("Kaldi data dir '" + dir + "': no wav.scp");
  const KaldiTable wavs = read_kaldi_table((root / "wav.scp").string(), true);
  KaldiTable text, spk, dur;
  const bool has_text = fs::exists(root / "text");
  if (has_text) text = read_kaldi_table((root / "text").string(), false);
  if (fs::exists(root / "utt2spk")) spk = read_kaldi_table((root / "utt2spk").string(), true);
  const bool has_dur = fs::exists(root / "utt2dur");
  if (has_dur) dur = read_kaldi_table((root / "utt2dur").string(), true);
  if (!has_dur) {
    MASR_LOG_WARN(
        "Kaldi data dir '%s' has no utt2dur: durations are unknown (needed for "
        "dynamic batching and duration filters)",
        dir.c_str());
  }
  for (const auto& key : text.order) {
    if (!wavs.entries.count(key)) {
      throw_input_error(text.entries.at(key).second + ": utterance '" + key +
                        "' is not in wav.scp");
    }
  }

  Manifest manifest;
  manifest.origin = dir;
  manifest.has_durations = has_dur;
  for (const auto& key : wavs.order) {
    const auto& [path, where] = wavs.entries.at(key);
    if (path.back() == '|') {
      throw_input_error(where + ": '" + path +
                        "' is a piped command; only file paths are supported");
    }
    ManifestRow row;
    row.id = key;
    row.wav = path;
    row.source = where;
    if (has_text) {
      const auto found = text.entries.find(key);
      if (found == text.entries.end())
        throw_input_error(dir + "/text: no transcript for '" + key + "'");
      row.wrd = found->second.first;
      check_utf8(row.wrd, found->second.second, "transcript");
    }
    if (const auto found = spk.entries.find(key); found != spk.entries.end()) {
      row.spk_id = found->second.first;
    }
    if (has_dur) {
      const auto found = dur.entries.find(key);
      if (found == dur.entries.end())
        throw_input_error(dir + "/utt2dur: no duration for '" + key + "'");
      row.duration = parse_duration(found->second.first, found->second.second);
    }
    manifest.rows.push_back(std::move(row));
  }
  return manifest;
}

Manifest read_audio_list(const std::string& path) {
  std::ifstream in = open_input(path, "audio list");
  Manifest manifest;
  manifest.origin = path;
  manifest.has_durations = false;
  std::unordered_map<std::string, std::string> seen;  // id -> where
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    const std::string audio = line.substr(start, line.find_last_not_of(" \t") - start + 1);
    const std::string where = path + ":" + std::to_string(n);
    ManifestRow row;
    row.id = fs::path(audio).stem().string();
    row.wav = audio;
    row.source = where;
    if (const auto [it, fresh] = seen.emplace(row.id, where); !fresh) {
      throw_input_error(where + ": duplicate ID '" + row.id +
                        "' (the file name without extension; also at " + it->second + ")");
    }
    manifest.rows.push_back(std::move(row));
  }
  if (manifest.rows.empty())
    throw_input_error(path + ": empty file; expected one audio path per line");
  return manifest;
}

Manifest read_manifest(const std::string& path, const Replacements& replacements) {
  if (fs::is_directory(path)) return read_kaldi_dir(path);
  if (fs::path(path).extension() == ".csv") return read_speechbrain_csv(path, replacements);
  return read_audio_list(path);
}

void write_speechbrain_csv(const std::string& path, const Manifest& manifest) {
  std::ostringstream out;
  out << "ID,duration,wav,spk_id,wrd";
  for (const auto& column : manifest.extra_columns) out << ',' << csv_quote_minimal(column);
  out << '\n';
  for (const auto& row : manifest.rows) {
    out << csv_quote_minimal(row.id) << ',' << format_double(row.duration) << ','
        << csv_quote_minimal(row.wav) << ',' << csv_quote_minimal(row.spk_id) << ','
        << csv_quote_minimal(row.wrd);
    for (const auto& column : manifest.extra_columns) {
      const std::string* value = row.find_extra(column);
      out << ',' << csv_quote_minimal(value ? *value : "");
    }
    out << '\n';
  }
  // Atomic: a full disk or a kill leaves the old manifest (or none), never half of one.
  write_file_atomically(path, out.str());
}

}  // namespace masr::data
