// lib/decode/transcript_writer.h
// Where decode's transcripts go: one stream on stdout in one format, or one file per input under
// an output folder (DIR/ID.srt, DIR/ID.json, ...) in one or more formats at once, as whisper.cpp's
// -otxt/-osrt/-oj and sherpa-onnx's output files do.
#pragma once

#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "decode/subtitle_cues.h"
#include "decode/transcript.h"

namespace masr::decode {

// text: "ID TEXT" lines (Kaldi's `text`); txt: the transcript alone; json: one object per input;
// srt, vtt: subtitle cues; ctm: NIST CTM word lines.
enum class OutputFormat { kText, kTxt, kJson, kSrt, kVtt, kCtm };

const char* output_format_name(OutputFormat format);  // also the files' extension
// "srt,json" -> {kSrt, kJson}; a usage error naming the unknown one and the choices.
std::vector<OutputFormat> parse_output_formats(const std::string& list);

// One transcript in `format`; `cue` numbers SRT cues across the transcripts of one stream.
std::string render_transcript(const Transcript& t, OutputFormat format,
                              const SubtitleOptions& subtitles, int& cue);

// The file name an utterance id gives under an output folder: its '/'-separated parts kept as
// folders, parts that would leave the folder ("", ".", "..") replaced by "_".
std::string output_file_stem(const std::string& id);

class TranscriptWriter {
 public:
  // `output_dir` empty: everything to `out` (exactly one format). Otherwise each transcript is
  // written to output_dir/STEM.EXT per format (atomically; folders created), and `text` to the one
  // Kaldi file output_dir/text.
  TranscriptWriter(std::vector<OutputFormat> formats, std::string output_dir,
                   SubtitleOptions subtitles, std::ostream& out);
  // A usage error when `inputs` utterances cannot go where asked: several formats, or SRT/VTT of
  // several inputs, to one stream on stdout.
  void check(size_t inputs) const;
  void write(const Transcript& t);
  // Files written so far (empty for stdout).
  size_t files_written() const { return files_; }

 private:
  std::vector<OutputFormat> formats_;
  std::string dir_;
  SubtitleOptions subtitles_;
  std::ostream& out_;
  bool started_ = false;
  int cue_ = 0;
  size_t files_ = 0;
  std::unique_ptr<std::ofstream> kaldi_text_;  // output_dir/text, with `text` and a folder
};

}  // namespace masr::decode
