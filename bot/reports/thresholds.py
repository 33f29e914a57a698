"""`JUDGE_CALIBRATION_*`: the limits `judge-bot calibrate` measures readiness against.

The defaults are seed 000's phase B prerequisites: false positives under 10 %, false
negatives under 5 %, GO between 70 and 90 %, UNDETERMINED under 15 %, provider
availability over 95 %, median latency under 30 s, over at least two weeks of data.
The minimum sample is ours: below it the rates say too little to switch on.

Prices are per 1,000 tokens (prompt and completion alike), per model as the records
name it: `JUDGE_CALIBRATION_PRICE_PER_1K_TOKENS=opencode/gpt-5-nano=0.0004,kimi=0.001`.
Loaded by `bot.settings.load_judge_section`, from the same sources as every setting.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

Fraction = Annotated[float, Field(ge=0, le=1)]


class CalibrationThresholds(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="JUDGE_", extra="ignore", frozen=True, hide_input_in_errors=True
    )

    calibration_max_false_positive_rate: Fraction = 0.10
    calibration_max_false_negative_rate: Fraction = 0.05
    calibration_min_go_rate: Fraction = 0.70
    calibration_max_go_rate: Fraction = 0.90
    calibration_max_undetermined_rate: Fraction = 0.15
    calibration_min_availability: Fraction = 0.95
    calibration_max_median_latency_seconds: float = Field(default=30.0, gt=0)
    calibration_min_sample: int = Field(default=50, ge=1)
    calibration_min_days: int = Field(default=14, ge=1)
    calibration_price_per_1k_tokens: Annotated[dict[str, float], NoDecode] = Field(
        default_factory=dict
    )

    @field_validator("calibration_price_per_1k_tokens", mode="before")
    @classmethod
    def _prices(cls, value: Any) -> Any:
        return parse_prices(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _go_range(self) -> CalibrationThresholds:
        if self.calibration_min_go_rate > self.calibration_max_go_rate:
            raise ValueError("JUDGE_CALIBRATION_MIN_GO_RATE is above JUDGE_CALIBRATION_MAX_GO_RATE")
        return self


def parse_prices(text: str) -> dict[str, float]:
    """`model=price,model=price`; the last `=` splits, since a model id may hold one."""
    prices: dict[str, float] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        model, sep, price = item.strip().rpartition("=")
        if not sep or not model.strip():
            raise ValueError(f"{item.strip()!r} is not model=price")
        try:
            value = float(price)
        except ValueError:
            raise ValueError(f"the price of {model.strip()!r} is not a number") from None
        if not value >= 0 or value == float("inf"):
            raise ValueError(f"the price of {model.strip()!r} must be a finite number >= 0")
        prices[model.strip()] = value
    return prices
