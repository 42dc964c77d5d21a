"""template.yaml resolved for given parameter values: conditions, Fn::If, and the Rules that refuse a deploy.

The tests evaluate conditions and rules with the values a deploy would give, so they check what
CloudFormation would create or refuse, not how the template happens to spell it. Only the functions
the tested fragments use are resolved; any other function is kept as written.
"""

from __future__ import annotations

from typing import Any

from deploy.template_model import template

# The parameters without defaults, as `sam deploy --guided` would store them.
REQUIRED_VALUES = {
    "DatabaseName": "shop",
    "DatabaseSecretArn": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:icetide/source-db-AbCdEf",
    "SubnetIds": "subnet-1,subnet-2",
    "SecurityGroupIds": "sg-1",
    "NotificationEmail": "data@example.com",
}


class _NoValue:
    """AWS::NoValue: the property is left out."""


NO_VALUE = _NoValue()


def _is_list(parameter: dict[str, Any]) -> bool:
    kind = str(parameter["Type"])
    return kind == "CommaDelimitedList" or kind.startswith("List<")


def parameter_values(**given: str) -> dict[str, Any]:
    """Every parameter's value for a deploy: defaults, the required ones, then ``given``.

    List parameters become lists, as ``Ref`` gives them to the template ("" is the list [""]).
    """
    parameters = template()["Parameters"]
    values = {name: p["Default"] for name, p in parameters.items() if "Default" in p}
    values = {**values, **REQUIRED_VALUES, **given}
    return {
        name: str(value).split(",") if _is_list(parameters[name]) else value for name, value in values.items()
    }


def resolve(node: Any, values: dict[str, Any]) -> Any:
    """A template fragment as CloudFormation resolves it for these parameter values."""
    if isinstance(node, list):
        return [item for item in (resolve(item, values) for item in node) if item is not NO_VALUE]
    if not isinstance(node, dict):
        return node
    if len(node) == 1:
        ((key, argument),) = node.items()
        if key == "Ref":
            if argument == "AWS::NoValue":
                return NO_VALUE
            return values.get(argument, node)
        if key == "Condition":
            return resolve(template()["Conditions"][argument], values)
        if key == "Fn::If":
            condition, when_true, when_false = argument
            chosen = when_true if resolve({"Condition": condition}, values) else when_false
            return resolve(chosen, values)
        if key == "Fn::Equals":
            left, right = (resolve(side, values) for side in argument)
            return left == right
        if key == "Fn::Not":
            return not resolve(argument[0], values)
        if key == "Fn::And":
            return all(resolve(part, values) for part in argument)
        if key == "Fn::Or":
            return any(resolve(part, values) for part in argument)
        if key == "Fn::Contains":
            candidates, value = (resolve(part, values) for part in argument)
            return value in candidates
    resolved = {key: resolve(value, values) for key, value in node.items()}
    return {key: value for key, value in resolved.items() if value is not NO_VALUE}


def refusals(**given: str) -> list[str]:
    """The AssertDescriptions of the template's Rules that this deploy's parameters fail."""
    values = parameter_values(**given)
    refused = []
    for rule in template().get("Rules", {}).values():
        if "RuleCondition" in rule and not resolve(rule["RuleCondition"], values):
            continue
        refused += [a["AssertDescription"] for a in rule["Assertions"] if not resolve(a["Assert"], values)]
    return refused


def created(logical_id: str, **given: str) -> bool:
    """Whether a deploy with these parameters creates the resource (its Condition holds, if any)."""
    resource = template()["Resources"][logical_id]
    if "Condition" not in resource:
        return True
    return bool(resolve({"Condition": resource["Condition"]}, parameter_values(**given)))
