"""Reading the run manifest the Glue job wrote, as `commit_watermark` does.

The manifest's one definition is `icetide_contracts.run_manifest.RunManifest` (docs/contracts.md,
"Run manifest"), which the Glue job writes too. The watermark is advanced from its `newWatermark`
only, so a manifest that does not hold together is refused outright, as the error the state
machine knows.
"""

from __future__ import annotations

from icetide.errors import ManifestInvalid
from icetide_contracts.json_fields import ContractViolation
from icetide_contracts.run_manifest import RunManifest


def read_manifest(content: str | bytes) -> RunManifest:
    """The manifest in `content`; ManifestInvalid says what is wrong (not JSON, or which field and why)."""
    try:
        return RunManifest.from_text(content)
    except ContractViolation as violation:
        raise ManifestInvalid(str(violation)) from None
