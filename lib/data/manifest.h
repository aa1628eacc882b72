// lib/data/manifest.h
// Dataset manifests: SpeechBrain CSVs (ID,duration,wav,spk_id,wrd), Kaldi data folders (wav.scp +
// text) and plain lists of audio paths, all read into one row type; and a SpeechBrain CSV writer.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace masr::data {

struct ManifestRow {
  std::string id;
  double duration =
      0.0;  // seconds; 0 when the source does not say (plain lists, Kaldi w/o utt2dur)
  std::string wav;
  std::string spk_id;
  std::string wrd;
  std::vector<std::pair<std::string, std::string>> extra;  // other CSV columns, in file order
  std::string source;  // "file:line", for messages about this row

  // The value of an extra column, or nullptr.
  const std::string* find_extra(const std::string& column) const;
};

struct Manifest {
  std::string origin;                      // the file or folder it was read from
  std::vector<std::string> extra_columns;  // CSV columns beyond the standard five
  std::vector<ManifestRow> rows;
  bool has_durations = true;  // false when durations are unknown (then they are all 0)

  double total_duration() const;
  size_t size() const { return rows.size(); }
};

// `$name` values in fields (SpeechBrain's `$data_root`), replaced as SB:dataio/dataio.py
// load_data_csv does: `$` followed by letters, digits, `_` or `.`.
using Replacements = std::map<std::string, std::string>;

// Reads a SpeechBrain CSV: a header with at least ID, duration and wav (spk_id, wrd optional, any
// other column kept in `extra`), comma-separated, `"`-quoted fields with `""` escapes (fields may
// hold commas and line breaks), spaces after a comma skipped (SB reads with skipinitialspace).
// Errors name the file and line: missing or extra fields, a non-numeric or negative duration, a
// duplicate ID, an unknown `$var`, an empty file, a header without rows.
Manifest read_speechbrain_csv(const std::string& path, const Replacements& replacements = {});

// Reads a Kaldi data folder: `wav.scp` (`<utt> <path>`; piped commands are an error) and, when
// present, `text`, `utt2spk` and `utt2dur`. A `segments` file is an error (segments are not
// supported: the ids of wav.scp would be recordings, not utterances). Without utt2dur, durations
// are unknown (has_durations = false, logged).
Manifest read_kaldi_dir(const std::string& dir);

// Reads a list of audio paths, one per line (blank lines and `#` comments skipped); each id is the
// file name without its extension, and must be unique. Durations are unknown.
Manifest read_audio_list(const std::string& path);

// A folder is a Kaldi data dir, a `.csv` file a SpeechBrain CSV, anything else a list of paths.
Manifest read_manifest(const std::string& path, const Replacements& replacements = {});

// Writes a SpeechBrain CSV (QUOTE_MINIMAL, `\n` line ends, durations in shortest round-trip form):
// ID,duration,wav,spk_id,wrd, then the manifest's extra columns.
void write_speechbrain_csv(const std::string& path, const Manifest& manifest);

}  // namespace masr::data
