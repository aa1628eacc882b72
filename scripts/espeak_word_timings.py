#!/usr/bin/python3
"""Synthesizes sentences with libespeak-ng and reports when each word starts and ends.

    espeak_word_timings.py --out DIR [--voice V --speed S --pitch P] "SENTENCE" ...
    espeak_word_timings.py --out DIR --plan PLAN.tsv [--limit N]   (make_synth_corpus.sh's plan)

For every sentence it writes DIR/<id>.wav (16-bit mono at espeak-ng's 22.05 kHz) and one JSON line on
stdout: {"id", "wav", "text", "words": [{"word", "start", "end"}]} with times in seconds.

The times come from espeak-ng's own synthesis events, read through its C API (ctypes): a WORD event
marks the sample where a word's first phoneme starts; PHONEME events mark every phoneme, including
the pauses ("_") between words. A word ends where the next pause or the next word starts,
whichever comes first; the last word ends at the last non-pause phoneme's end (the END event).
"""
import argparse
import ctypes
import json
import os
import sys
import wave

AUDIO_OUTPUT_SYNCHRONOUS = 2
INITIALIZE_PHONEME_EVENTS = 0x0001
EVENT_LIST_TERMINATED, EVENT_WORD, EVENT_END, EVENT_PHONEME = 0, 1, 5, 7
RATE, PITCH = 1, 3
POS_CHARACTER = 1
ENDPAUSE = 0x1000  # espeakENDPAUSE: the pause after the last clause, as the espeak-ng CLI adds it


class EventId(ctypes.Union):
    _fields_ = [("number", ctypes.c_int), ("name", ctypes.c_char_p), ("string", ctypes.c_char * 8)]


class Voice(ctypes.Structure):  # espeak_VOICE
    _fields_ = [("name", ctypes.c_char_p), ("languages", ctypes.c_char_p),
                ("identifier", ctypes.c_char_p), ("gender", ctypes.c_ubyte),
                ("age", ctypes.c_ubyte), ("variant", ctypes.c_ubyte), ("xx1", ctypes.c_ubyte),
                ("score", ctypes.c_int), ("spare", ctypes.c_void_p)]


class Event(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("unique_identifier", ctypes.c_uint),
                ("text_position", ctypes.c_int), ("length", ctypes.c_int),
                ("audio_position", ctypes.c_int), ("sample", ctypes.c_int),
                ("user_data", ctypes.c_void_p), ("id", EventId)]


CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int,
                            ctypes.POINTER(Event))


class Espeak:
    def __init__(self):
        self.lib = ctypes.CDLL("libespeak-ng.so.1")
        self.rate = self.lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, None,
                                               INITIALIZE_PHONEME_EVENTS)
        if self.rate <= 0:
            raise RuntimeError("espeak_Initialize failed")
        self.samples, self.events = [], []
        self.callback = CALLBACK(self._on_audio)  # kept alive for the library
        self.lib.espeak_SetSynthCallback(self.callback)

    def _on_audio(self, wav, count, events):
        if count > 0:
            self.samples.extend(wav[:count])
        i = 0
        while events[i].type != EVENT_LIST_TERMINATED:
            e = events[i]
            name = e.id.string.decode("ascii", "replace") if e.type == EVENT_PHONEME else ""
            self.events.append((e.type, e.sample, e.text_position, e.length, name))
            i += 1
        return 0

    def synthesize(self, text, voice, speed, pitch):
        # As the espeak-ng CLI's -v: a voice name or file ("en-gb-x-rp+f4"), else a language
        # ("en-gb+f1": no voice file is called en-gb; its voice is gmw/en).
        if self.lib.espeak_SetVoiceByName(voice.encode()) != 0:
            selector = Voice(None, voice.encode(), None, 0, 0, 0, 0, 0, None)
            if self.lib.espeak_SetVoiceByProperties(ctypes.byref(selector)) != 0:
                raise RuntimeError(f"espeak-ng has no voice '{voice}'")
        self.lib.espeak_SetParameter(RATE, speed, 0)
        self.lib.espeak_SetParameter(PITCH, pitch, 0)
        self.samples, self.events = [], []
        data = text.encode()
        self.lib.espeak_Synth(data, len(data) + 1, 0, POS_CHARACTER, 0, ENDPAUSE, None, None)
        self.lib.espeak_Synchronize()
        return self.samples, self.events


def is_pause(name):
    # espeak-ng's pause "phonemes": "_", "_:", "_!" ... and ";" (a short pause between words).
    return name.startswith("_") or name == ";" or name == ""


def word_spans(text, events, rate):
    """[(word, start_s, end_s)] for every space-separated word of `text`; start/end are None
    where espeak-ng gave no timing (it speaks some word pairs as one, e.g. "no one")."""
    words, pos = [], 0
    for w in text.split(" "):
        words.append((w, pos + 1))  # espeak-ng's text positions count characters from 1
        pos += len(w) + 1
    by_position = {p: i for i, (_, p) in enumerate(words)}
    phonemes = {}  # word index -> [(sample, name)]; phonemes follow their WORD event
    current, following = None, {}  # following: word index -> first event sample after its phonemes
    end_sample = max((e[1] for e in events if e[0] == EVENT_END), default=0)
    for typ, sample, position, _, name in events:
        if typ == EVENT_WORD:
            current = by_position.get(position)
            if current is not None:
                phonemes[current] = []
        elif typ == EVENT_PHONEME and current is not None:
            if is_pause(name):
                following.setdefault(current, sample)
            elif current not in following:
                phonemes[current].append(sample)
            if current - 1 in phonemes and current - 1 not in following:
                following[current - 1] = sample
    spans = []
    for i, (w, _) in enumerate(words):
        start = end = None
        if phonemes.get(i):
            start = phonemes[i][0] / rate
            if i + 1 == len(words):
                end = following.get(i, end_sample) / rate
            elif i + 1 in phonemes:  # the next word has its own timing, so this one ended
                end = following.get(i, phonemes[i + 1][0] if phonemes[i + 1] else None)
                end = None if end is None else end / rate
        spans.append((w, start, end))
    return spans


def write_wav(path, samples, rate):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((ctypes.c_short * len(samples))(*samples))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--voice", default="en-us")
    ap.add_argument("--speed", type=int, default=160)
    ap.add_argument("--pitch", type=int, default=50)
    ap.add_argument("--plan", help="make_synth_corpus.sh's plan.tsv: id split voice speed pitch text")
    ap.add_argument("--split", default="test", help="with --plan: only this split")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("sentences", nargs="*")
    args = ap.parse_args()
    jobs = []
    if args.plan:
        for line in open(args.plan, encoding="utf-8"):
            uid, split, voice, speed, pitch, text = line.rstrip("\n").split("\t")
            if split == args.split:
                jobs.append((uid, voice, int(speed), int(pitch), text))
    for i, text in enumerate(args.sentences):
        jobs.append((f"utt{i:04d}", args.voice, args.speed, args.pitch, text))
    if args.limit:
        jobs = jobs[:args.limit]
    os.makedirs(args.out, exist_ok=True)
    espeak = Espeak()
    for uid, voice, speed, pitch, text in jobs:
        spoken = text.lower()  # as make_synth_corpus.sh speaks it
        samples, events = espeak.synthesize(spoken, voice, speed, pitch)
        wav = os.path.join(args.out, uid + ".wav")
        write_wav(wav, samples, espeak.rate)
        words = [{"word": w.upper(), "start": None if s is None else round(s, 4),
                  "end": None if e is None else round(e, 4)}
                 for w, s, e in word_spans(spoken, events, espeak.rate)]
        print(json.dumps({"id": uid, "wav": wav, "text": text, "words": words}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
