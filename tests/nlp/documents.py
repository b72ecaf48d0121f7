"""Small generated documents with known structure, shared by the NLP tests."""

from __future__ import annotations

SOLAR = """Solar panels convert sunlight into electricity using photovoltaic cells.
The efficiency of solar panels has improved steadily over the last decade.
Modern photovoltaic cells reach efficiencies above twenty percent in commercial products.
Installing solar panels on rooftops lets households generate their own electricity.
My neighbour's cat enjoys sleeping in a cardboard box.
Solar electricity costs have fallen sharply, making rooftop installations affordable.
Batteries store surplus solar electricity for use after sunset.
Grid operators must balance the variable output of solar farms with other sources.

Large solar farms now supply a growing share of electricity in sunny regions.
Solar farms in sunny regions now supply a growing share of the electricity.
Government subsidies helped early adopters pay for photovoltaic installations.
Researchers are developing perovskite cells that could make solar panels even cheaper."""

OFF_TOPIC = "My neighbour's cat enjoys sleeping in a cardboard box."
NEAR_DUPLICATES = (
    "Large solar farms now supply a growing share of electricity in sunny regions.",
    "Solar farms in sunny regions now supply a growing share of the electricity.",
)

MEMO = """The quarterly review found that customer churn rose to 8% after the price increase in March.
Support tickets doubled, and most complaints concerned slow response times.
The team should hire two more support agents before the holiday season.
We must fix the billing bug that charged some customers twice.
Management could consider a loyalty discount for long-term customers.
Overall, revenue still grew by 5%, but the trend is worrying."""
