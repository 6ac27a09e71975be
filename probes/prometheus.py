"""Every gauge and counter a Prometheus endpoint exposes, under the name it exposes."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from engine.trust import session

# Histograms and summaries are left out: their buckets are not a reading of "now".
KINDS = {"gauge", "counter", "untyped", "unknown"}


class PrometheusProbe:
    """Scrapes one /metrics URL per reading."""

    name = "metrics"

    def __init__(self, url: str, timeout_s: float):
        self._url = url
        self._timeout_s = timeout_s
        self._session = session()

    def read(self) -> dict[str, float]:
        """Each series as ``name{label="value",...}`` to its current value."""
        response = self._session.get(self._url, timeout=self._timeout_s)
        response.raise_for_status()
        readings = {}
        for family in text_string_to_metric_families(response.text):
            if family.type not in KINDS:
                continue
            for sample in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                readings[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
        return readings

    def close(self) -> None:
        self._session.close()
