// lib/decode/decode_inputs.cpp
// Expanding decode inputs into utterances.
#include "decode/decode_inputs.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"

namespace masr::decode {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

data::ManifestRow audio_row(const fs::path& path, const std::string& source) {
  data::ManifestRow row;
  row.id = path.stem().string();
  row.wav = path.string();
  row.source = source;
  return row;
}

void append_folder(const fs::path& folder, std::vector<data::ManifestRow>& rows) {
  if (fs::exists(folder / "wav.scp")) {  // a Kaldi data folder
    for (auto& row : data::read_kaldi_dir(folder.string()).rows) rows.push_back(std::move(row));
    return;
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    const std::string ext = lower(entry.path().extension().string());
    const auto& known = audio_extensions();
    if (entry.is_regular_file() && std::find(known.begin(), known.end(), ext) != known.end()) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) rows.push_back(audio_row(file, folder.string()));
}

void append_input(const std::string& input, std::istream& stdin_list,
                  const data::Replacements& replacements, std::vector<data::ManifestRow>& rows) {
  if (input == "-") {
    std::string line;
    for (int n = 1; std::getline(stdin_list, line); ++n) {
      const size_t begin = line.find_first_not_of(" \t\r");
      if (begin == std::string::npos || line[begin] == '#') continue;
      const std::string path = line.substr(begin, line.find_last_not_of(" \t\r") - begin + 1);
      rows.push_back(audio_row(path, "stdin:" + std::to_string(n)));
    }
    return;
  }
  if (input.size() > 1 && input[0] == '@') {
    for (auto& row : data::read_audio_list(input.substr(1)).rows) rows.push_back(std::move(row));
    return;
  }
  const fs::path path(input);
  const std::string ext = lower(path.extension().string());
  if (!fs::exists(path)) {
    // A missing audio file is one bad utterance among many: the reader reports and skips it.
    if (ext == ".csv" || path.filename() == "wav.scp" || ext.empty()) {
      throw_input_error("decode input '" + input + "' does not exist");
    }
    rows.push_back(audio_row(path, input));
    return;
  }
  if (fs::is_directory(path)) return append_folder(path, rows);
  if (ext == ".csv") {
    for (auto& row : data::read_speechbrain_csv(input, replacements).rows) rows.push_back(std::move(row));
  } else if (path.filename() == "wav.scp") {
    const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
    for (auto& row : data::read_kaldi_dir(parent.string()).rows) rows.push_back(std::move(row));
  } else {
    rows.push_back(audio_row(path, input));
  }
}

}  // namespace

const std::vector<std::string>& audio_extensions() {
  static const std::vector<std::string> extensions = {".wav", ".flac", ".ogg", ".opus",
                                                      ".mp3", ".aiff", ".au",  ".sph"};
  return extensions;
}

std::vector<data::ManifestRow> gather_inputs(const std::vector<std::string>& inputs,
                                             std::istream& stdin_list,
                                             const data::Replacements& replacements) {
  std::vector<data::ManifestRow> rows;
  for (const std::string& input : inputs) append_input(input, stdin_list, replacements, rows);
  std::map<std::string, std::string> seen;  // id -> source
  for (const auto& row : rows) {
    const auto [it, fresh] = seen.emplace(row.id, row.source);
    if (!fresh) {
      throw_input_error("decode inputs: utterance id '" + row.id + "' appears twice (" +
                        it->second + " and " + row.source +
                        "); ids are file names without extension, so rename one file or use a CSV");
    }
  }
  return rows;
}

}  // namespace masr::decode
