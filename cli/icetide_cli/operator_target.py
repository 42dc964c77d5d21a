"""Where an operator verb acts: a local workspace or a deployed stack.

Every operator verb (`status`, `runs`, `run`, `reset`, `reload`, `unlock`, `verify`) takes the same
target options, so a command learnt against `icetide local` works unchanged against AWS:
`--workspace DIR` or `--stack NAME` (with `--region` and `--profile`), and `--json`.

A stack's resources are found from its CloudFormation outputs (template.yaml's `Outputs`), never
from names guessed here, so a renamed resource or a second stack in one account still resolves.
boto3 is imported on demand: `icetide --help` must not pay for it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import boto3


class TargetError(Exception):
    """The target cannot be used: no such workspace or stack, or an output the verb needs is missing."""


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --workspace | --stack (exactly one), --region, --profile and --json to a verb's parser."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--workspace", metavar="DIR", help="a local workspace (as `icetide local run` keeps)")
    where.add_argument("--stack", metavar="NAME", help="a deployed icetide stack (its CloudFormation name)")
    parser.add_argument(
        "--region", metavar="REGION", help="AWS Region of the stack (default: your profile's)"
    )
    parser.add_argument("--profile", metavar="PROFILE", help="AWS named profile (default: the usual chain)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


# The stack output naming the control table, which every stack verb reads.
CONTROL_TABLE_OUTPUT = "ControlTableName"
DEFAULT_WAIT_SECONDS = 3 * 3600.0
DEFAULT_POLL_SECONDS = 15.0


def add_wait_arguments(parser: argparse.ArgumentParser, run: str, *, timeout_locally: bool = False) -> None:
    """Add --no-wait, --timeout and --poll-seconds to a verb that starts ``run`` and waits for its
    end (``timeout_locally``: --timeout bounds a local run too)."""
    parser.add_argument(
        "--no-wait", action="store_true", help=f"with --stack: start the {run}, print its execution ARN"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_WAIT_SECONDS,
        metavar="SECONDS",
        help=f"{'' if timeout_locally else 'with --stack: '}stop waiting for the {run} after this long "
        f"(default {DEFAULT_WAIT_SECONDS:.0f}); it goes on",
    )
    parser.add_argument(
        "--poll-seconds",
        type=float,
        default=DEFAULT_POLL_SECONDS,
        metavar="SECONDS",
        help=f"with --stack: how often to look at the {run} (default {DEFAULT_POLL_SECONDS:.0f})",
    )


@dataclass(frozen=True)
class WorkspaceTarget:
    """A local workspace directory (see icetide_local.workspace.Workspace for its layout)."""

    workspace: Path


@dataclass(frozen=True)
class StackTarget:
    """A deployed stack; its resources are read from the stack's outputs on first use."""

    stack_name: str
    region: str | None = None
    profile: str | None = None
    _outputs: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    _parameters: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def session(self) -> boto3.Session:
        """A boto3 session for the target's Region and profile (the usual credential chain)."""
        import boto3
        import botocore.exceptions

        try:
            return boto3.Session(region_name=self.region, profile_name=self.profile)
        except botocore.exceptions.ProfileNotFound as exc:
            raise TargetError(f"--profile {self.profile}: {exc}") from exc

    def client(self, service: str) -> Any:
        """A boto3 client of the target's session."""
        return self.session().client(service)  # type: ignore[call-overload]

    def outputs(self) -> dict[str, str]:
        """The stack's outputs by key (read once)."""
        if not self._outputs:
            import botocore.exceptions

            try:
                stacks = self.client("cloudformation").describe_stacks(StackName=self.stack_name)["Stacks"]
            except botocore.exceptions.ClientError as exc:
                raise TargetError(f"stack {self.stack_name}: {exc.response['Error']['Message']}") from exc
            except botocore.exceptions.BotoCoreError as exc:
                raise TargetError(f"stack {self.stack_name}: {exc}") from exc
            for output in stacks[0].get("Outputs", []):
                self._outputs[output["OutputKey"]] = output["OutputValue"]
            for parameter in stacks[0].get("Parameters", []):
                self._parameters[parameter["ParameterKey"]] = parameter.get("ParameterValue", "")
        return self._outputs

    def parameter(self, key: str) -> str | None:
        """The value the stack was deployed with for parameter ``key`` (e.g. ``ScheduleSlotMinutes``),
        or None when the stack does not list it (then the template's default applies)."""
        self.outputs()
        return self._parameters.get(key)

    @contextmanager
    def adapters_use_this_stack(self) -> Iterator[None]:
        """Within the block, icetide's own AWS adapters (``icetide.adapters``, which the Lambdas use
        with boto3's default session) call this target's account and Region, so a verb reuses their
        rules (e.g. ``start_execution_once``) instead of copying them."""
        import boto3

        from icetide.adapters.clients import reset_clients

        previous = boto3.DEFAULT_SESSION
        boto3.DEFAULT_SESSION = self.session()
        reset_clients()
        try:
            yield
        finally:
            boto3.DEFAULT_SESSION = previous
            reset_clients()

    def output(self, key: str) -> str:
        """One output of the stack, e.g. ``ControlTableName``; TargetError names it when missing."""
        outputs = self.outputs()
        if key not in outputs:
            raise TargetError(
                f"stack {self.stack_name} has no output {key!r} (is it an icetide stack, and up to date?)"
            )
        return outputs[key]


Target = WorkspaceTarget | StackTarget


def target_from_args(args: argparse.Namespace, *, create_workspace: bool = False) -> Target:
    """The target the parsed options name; a workspace must exist (TargetError otherwise) unless
    ``create_workspace`` (a verb that runs a cycle creates it, as `icetide local run` does)."""
    if args.workspace is not None:
        if args.region or args.profile:
            raise TargetError("--region and --profile apply to --stack only")
        path = Path(args.workspace)
        if create_workspace and not path.exists():
            return WorkspaceTarget(path.resolve())
        if not path.is_dir():
            raise TargetError(f"workspace {path} does not exist (create it with `icetide local run`)")
        return WorkspaceTarget(path.resolve())
    return StackTarget(args.stack, region=args.region, profile=args.profile)
