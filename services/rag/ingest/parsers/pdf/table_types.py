"""What the PDF table finders read and return: words, drawn lines and tables, in page coordinates."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PdfTable:
    bbox: tuple[float, float, float, float]
    """x0, top, x1, bottom in pdfplumber's page coordinates (top-left origin, points)."""
    rows: tuple[tuple[str, ...], ...]
    """The header row first, then the data rows; every row has the same number of cells."""


@dataclass
class Word:
    """A word on the page: its box (top-left origin, points) and text."""

    x0: float
    x1: float
    top: float
    bottom: float
    text: str

    @property
    def height(self) -> float:
        return max(self.bottom - self.top, 1.0)



@dataclass(frozen=True)
class Rule:
    """A drawn line segment (or a rectangle's side), horizontal or vertical."""

    x0: float
    top: float
    x1: float
    bottom: float

    def edge(self) -> dict:
        horizontal = abs(self.bottom - self.top) <= abs(self.x1 - self.x0)
        if horizontal:
            y = (self.top + self.bottom) / 2
            return {"x0": self.x0, "x1": self.x1, "top": y, "bottom": y, "width": self.x1 - self.x0, "height": 0.0,
                    "orientation": "h", "object_type": "line"}
        x = (self.x0 + self.x1) / 2
        return {"x0": x, "x1": x, "top": self.top, "bottom": self.bottom, "width": 0.0,
                "height": self.bottom - self.top, "orientation": "v", "object_type": "line"}
