"""Reading the run manifest the Glue job wrote, as `commit_watermark` does.

The manifest's one definition is `icetide_contracts.run_manifest.RunManifest` (docs/contracts.md,
"Run manifest"), which the Glue job writes too. The watermark is advanced from its `newWatermark`
only, so a manifest that does not hold together is refused outright, as the error the state
machine knows.
"""

from __future__ import annotations

from icetide.errors import ManifestInvalid
from icetide_contracts.bronze_files import BronzeFiles
from icetide_contracts.json_fields import ContractViolation
from icetide_contracts.run_manifest import RunManifest
from icetide_contracts.run_plan import RunPlan


def read_manifest(content: str | bytes) -> RunManifest:
    """The manifest in `content`; ManifestInvalid says what is wrong (not JSON, or which field and why)."""
    try:
        return RunManifest.from_text(content)
    except ContractViolation as violation:
        raise ManifestInvalid(str(violation)) from None


def read_selection(content: str | bytes, plan: RunPlan) -> BronzeFiles:
    """The bronze file selection in `content`, which must be this run's, for this table's folder.

    The commit stores its last file as the table's file checkpoint: a selection of another run (a
    copy, a misrouted path) would move the checkpoint past files this run never merged.
    """
    try:
        selection = BronzeFiles.from_text(content)
    except ContractViolation as violation:
        raise ManifestInvalid(str(violation)) from None
    problems = selection.not_for(plan.run_id, plan.bronze_uri)
    if problems:
        raise ManifestInvalid(
            f"the bronze file selection {plan.bronze_files_uri} is not run {plan.run_id}'s: "
            + "; ".join(problems)
        )
    return selection
