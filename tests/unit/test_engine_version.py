"""Which DMS engine versions run icetide's tasks (icetide.dms.engine_version), and one default for all.

The minimum is the DMS API reference's (S3Settings, IncludeOpForFullLoad: "DMS supports the use of
the .parquet files with the IncludeOpForFullLoad parameter in versions 3.4.7 and later"); the
default is the one the AWS DMS release notes call "the current default engine version" (3.5.4).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from icetide.dms.engine_version import ReplicationEngineTooOld, check_engine_version, check_instance
from icetide.settings import Settings
from icetide_local.standins.dms.instances import DEFAULT_ENGINE_VERSION

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


def test_the_template_the_settings_and_the_stand_in_share_one_default() -> None:
    # The parameter's block: its name, indented lines, then its Default (the template's own layout).
    found = re.search(
        r"\n  DmsEngineVersion:\n(?:    .*\n)*?    Default: \"([^\"]+)\"\n", TEMPLATE.read_text()
    )
    assert found is not None, "template.yaml has no DmsEngineVersion parameter with a Default"
    default = found.group(1)
    assert default == "3.5.4"
    assert Settings(control_table_name="icetide-control").replication_engine_version == default
    assert default == DEFAULT_ENGINE_VERSION
    check_engine_version(default, "the default")  # the default can run icetide's tasks


def test_versions_are_compared_as_numbers_against_an_independent_oracle() -> None:
    generator = random.Random(46)
    for _ in range(500):
        parts = (generator.randint(2, 4), generator.randint(0, 12), generator.randint(0, 12))
        text = ".".join(map(str, parts)) + generator.choice(["", ".R1", ".beta"])
        # The oracle: 3.4.7 or later, compared part by part as whole numbers.
        supported = parts[0] > 3 or (parts[0] == 3 and (parts[1] > 4 or (parts[1] == 4 and parts[2] >= 7)))
        if supported:
            assert check_engine_version(text, "instance") == text
        else:
            with pytest.raises(ReplicationEngineTooOld, match=rf"instance runs DMS engine {text}"):
                check_engine_version(text, "instance")


@pytest.mark.parametrize("reported", [None, "", "latest", "3.5"])
def test_an_instance_whose_version_cannot_be_read_is_refused(reported: str | None) -> None:
    with pytest.raises(ReplicationEngineTooOld, match="cannot tell"):
        check_instance({"EngineVersion": reported}, "arn:aws:dms:eu-west-1:123456789012:rep:shared")
