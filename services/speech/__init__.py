"""Offline speech-to-text: packaged Whisper weights (hash-checked), PyAV decoding, bounded pools."""

from services.speech.media import Audio, decode
from services.speech.settings import SpeechSettings
from services.speech.transcriber import Lane, Segment, SpeechToText, Transcript, WhisperTranscriber

__all__ = ["Audio", "Lane", "Segment", "SpeechSettings", "SpeechToText", "Transcript", "WhisperTranscriber",
           "decode"]
