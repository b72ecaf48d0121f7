"""Speech benchmark: real-time factor and word error rate of the two packaged Whisper models, and the
end-to-end latency of a spoken question through the real mesh.

The speech set is SYNTHETIC: espeak-ng (a formant synthesiser, not a human voice) reads 20 fixed
English sentences at 140 to 175 words a minute, alternating two voices (en-us, en-gb), each clip with
short silences around it. WER on it says how well the models hear clean synthetic speech; it is no
estimate of WER on real recordings (accents, noise, overlapping talk), which would be higher.

- RTF: seconds of transcription compute per second of audio (decode excluded, VAD included), each
  model at ``cpu_threads`` 1 and 2, models alternated clip by clip so both see the same machine load.
- WER: word-level edit distance / reference words, after lower-casing and dropping punctuation.
- Spoken question (``--e2e``): the mesh is started on free ports with a temporary data dir, a
  recording is uploaded, then each question (a WebM recording) is POSTed to ``/v1/query:spoken``
  through Envoy; the latency is wall time per request, transcription + retrieval + answer.

    python -m bench.voice_bench [--clips 20] [--e2e] [--questions 5]

Writes bench/results/voice-<date>.json and prints it. The machine is shared (2 cores, others busy):
absolute times are noisy; the base/tiny.en ratio measured side by side is the steadier number.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import statistics
import tempfile
import time

import numpy as np

from bench.environment import describe
from services.speech import SpeechSettings, WhisperTranscriber, decode
from tests.speech.media_fixtures import encode, pcm, silence, speak, words

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
SENTENCES = [
    "The library closes early on public holidays and opens again the next morning.",
    "Please send the signed contract to the legal team before the end of the week.",
    "Our new warehouse near the harbor can store several thousand pallets.",
    "The river flooded the lower fields after three days of heavy rain.",
    "Remember to back up the database before you install the update.",
    "The committee approved the budget for the new cycling lanes.",
    "Fresh bread is delivered to the cafe every morning at dawn.",
    "The pilot announced that the flight would land twenty minutes late.",
    "Students must return their laptops to the front desk by Friday.",
    "A strong wind from the north made the ferry crossing rough.",
    "The doctor recommended a short walk after every meal.",
    "Engineers replaced the broken valve in the cooling system overnight.",
    "The museum is showing a collection of old maps and compasses.",
    "Our quarterly report shows steady growth in online sales.",
    "The children planted tomatoes and beans in the school garden.",
    "Traffic on the main bridge will be diverted during the repairs.",
    "The orchestra rehearsed the final movement until late at night.",
    "Customers can track their parcels on the website at any time.",
    "The mountain hut offers warm soup and a place to sleep.",
    "The inspector found no faults in the new electrical wiring.",
]
QUESTIONS = [
    ("Where is the emergency meeting point?", "crane"),
    ("What must visitors wear?", "helmet"),
]
BRIEFING = [
    "Welcome to the harbor safety briefing.",
    "The emergency meeting point is next to the blue crane by the river.",
    "Visitors must wear a yellow helmet at all times.",
]


def wer(reference: str, hypothesis: str) -> tuple[int, int]:
    """(word edits, reference words): Levenshtein distance over normalised words."""
    ref, hyp = words(reference), words(hypothesis)
    previous = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, start=1):
        current = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, start=1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (r != h))
        previous = current
    return previous[-1], len(ref)


def clip(sentence: str, index: int) -> tuple[bytes, float]:
    voice = "en-us" if index % 2 == 0 else "en-gb"
    samples, rate = pcm(speak(sentence, words_per_minute=140 + (index * 7) % 36, voice=voice))
    samples = np.concatenate([silence(0.4, rate), samples, silence(0.4, rate)])
    return encode(samples, rate, "wav"), len(samples) / rate


def transcription(clips: int) -> dict:
    cache = pathlib.Path(tempfile.mkdtemp(prefix="voice-bench-"))
    audio = [decode(clip(s, i)[0], 600) for i, s in enumerate(SENTENCES[:clips])]
    runs = {}
    for threads in (1, 2):
        models = {name: WhisperTranscriber(SpeechSettings(model=name, cpu_threads=threads, cache_dir=str(cache)))
                  for name in ("base", "tiny.en")}
        load_s = {}
        for name, model in models.items():
            started = time.perf_counter()
            model.warm_up()
            model.transcribe(audio[0])  # first call allocates; not timed
            load_s[name] = round(time.perf_counter() - started, 2)
        compute = {name: [] for name in models}
        errors = {name: [0, 0] for name in models}
        samples = {name: [] for name in models}
        for index, clip_audio in enumerate(audio):
            for name, model in models.items():
                started = time.perf_counter()
                transcript = model.transcribe(clip_audio)
                compute[name].append(time.perf_counter() - started)
                edits, total = wer(SENTENCES[index], transcript.text)
                errors[name][0] += edits
                errors[name][1] += total
                if len(samples[name]) < 3:
                    samples[name].append({"reference": SENTENCES[index], "heard": transcript.text})
        seconds = sum(a.seconds for a in audio)
        for name in models:
            runs.setdefault(name, {})[f"cpu_threads_{threads}"] = {
                "rtf": round(sum(compute[name]) / seconds, 3),
                "compute_s": round(sum(compute[name]), 2),
                "clip_p50_s": round(statistics.median(compute[name]), 3),
                "load_and_first_call_s": load_s[name],
            }
            runs[name]["wer"] = round(errors[name][0] / errors[name][1], 4)
            runs[name]["word_errors"], runs[name]["reference_words"] = errors[name]
            runs[name]["examples"] = samples[name]
        for model in models.values():
            model.close()
    return {"clips": len(audio), "audio_seconds": round(sum(a.seconds for a in audio), 2), "models": runs}


def spoken_question_latency(questions: int) -> dict:

    from services.launcher.mesh import Mesh
    from tests.speech.media_fixtures import recording

    root = pathlib.Path(tempfile.mkdtemp(prefix="voice-bench-mesh-"))
    tenant = {"x-tenant-id": "voice-bench"}
    with Mesh(data_dir=root / "data", log_dir=root / "logs", auto_ports=True,
              extra_env={"DOCUTHINKER_SHUTDOWN_GRACE_S": "2"}) as mesh, \
            mesh.http(timeout=300) as http:
        samples, rate, _ = recording(BRIEFING)
        started = time.perf_counter()
        reply = http.post("/v1/documents", params={"filename": "briefing.mp3"}, content=encode(samples, rate, "mp3"),
                          headers={**tenant, "content-type": "audio/mpeg"})
        upload_s = time.perf_counter() - started
        assert reply.status_code == 200, reply.text
        recordings = []
        for text, expect in QUESTIONS:
            q, r, _ = recording([text], lead_s=0.3, tail_s=0.3)
            recordings.append((encode(q, r, "webm"), len(q) / r, text, expect))
        http.post("/v1/query:spoken", content=recordings[0][0], headers={**tenant, "content-type": "audio/webm"})
        latencies, typed, correct, audio_s = [], [], 0, []
        for index in range(questions):
            data, seconds, text, expect = recordings[index % len(recordings)]
            started = time.perf_counter()
            reply = http.post("/v1/query:spoken", content=data, headers={**tenant, "content-type": "audio/webm"})
            latencies.append(time.perf_counter() - started)
            assert reply.status_code == 200, reply.text
            correct += expect in reply.json()["answer"]["answer"].lower()
            audio_s.append(seconds)
            started = time.perf_counter()
            http.post("/v1/query", json={"question": text}, headers=tenant)
            typed.append(time.perf_counter() - started)
    return {
        "questions": questions, "model": "base (default), cpu_threads 1",
        "question_audio_s_mean": round(statistics.mean(audio_s), 2),
        "spoken_p50_s": round(statistics.median(latencies), 3), "spoken_max_s": round(max(latencies), 3),
        "typed_p50_s": round(statistics.median(typed), 3),
        "answers_citing_the_right_sentence": f"{correct}/{questions}",
        "upload_14s_recording_s": round(upload_s, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clips", type=int, default=len(SENTENCES))
    parser.add_argument("--e2e", action="store_true", help="also time spoken questions through the mesh")
    parser.add_argument("--questions", type=int, default=6)
    args = parser.parse_args()
    result = {
        "benchmark": "voice", "date": dt.date.today().isoformat(), "environment": describe(),
        "speech_set": "SYNTHETIC: espeak-ng reading fixed English sentences (two voices, 140-175 wpm)",
        "transcription": transcription(args.clips),
    }
    if args.e2e:
        result["spoken_question"] = spoken_question_latency(args.questions)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"voice-{result['date']}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
