"""What IAM authorizes for each AWS call icetide makes: the Service Authorization Reference, kept small.

An API operation authorizes the IAM action of its own name in its service's prefix (the reference's
"API operations defined by ..." table maps them one to one for every operation icetide calls),
except the operations listed in OPERATION_PERMISSIONS, each with the page that says so. Step
Functions' Task states are in TASK_PERMISSIONS, from the Step Functions Developer Guide.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import botocore.session
from botocore import xform_name

from deploy.aws_calls import ApiCall

DMS_REFERENCE = (
    "Service Authorization Reference, 'Actions, resources, and condition keys for AWS Database Migration "
    "Service', table 'API operations defined by AWS Database Migration Service' "
    "(https://docs.aws.amazon.com/service-authorization/latest/reference/list_awsdatabasemigrationservice.html)"
)
S3_REFERENCE = (
    "Amazon S3 API Reference, ListObjectsV2, 'Permissions': 'You must have permission to perform the "
    "s3:ListBucket action' (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html)"
)
S3_GET_OBJECT = (
    "Amazon S3 API Reference, GetObject, 'Permissions': without s3:ListBucket a missing key is "
    "answered 403 AccessDenied instead of 404 NoSuchKey, which icetide.adapters.s3.read_text reads as "
    "'no object' (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html)"
)
GLUE_SYNC = (
    "Step Functions Developer Guide, 'Start an AWS Glue job with Step Functions', 'IAM policies for "
    "calling AWS Glue', Run a Job (.sync) (https://docs.aws.amazon.com/step-functions/latest/dg/connect-glue.html)"
)
SNS_PUBLISH = (
    "Step Functions Developer Guide, 'Publish messages to an Amazon SNS topic with Step Functions', "
    "'IAM policies for calling Amazon SNS'; for a topic encrypted with a KMS key, Amazon SNS Developer "
    "Guide, 'Key management' (publishers need kms:GenerateDataKey* and kms:Decrypt) "
    "(https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html)"
)
LAMBDA_INVOKE = (
    "Step Functions Developer Guide, 'Invoke an AWS Lambda function with Step Functions', 'IAM policies "
    "for calling AWS Lambda' (https://docs.aws.amazon.com/step-functions/latest/dg/connect-lambda.html)"
)
STATE_MACHINE_LOGGING = (
    "Step Functions Developer Guide, 'Logging Step Functions execution history in CloudWatch Logs', "
    "'IAM policies for logging to CloudWatch Logs' "
    "(https://docs.aws.amazon.com/step-functions/latest/dg/cw-logs.html)"
)

# boto3's client name -> the IAM service prefix (they differ for Step Functions).
IAM_PREFIX = {
    "dms": "dms",
    "dynamodb": "dynamodb",
    "glue": "glue",
    "logs": "logs",
    "s3": "s3",
    "stepfunctions": "states",
}


@dataclass(frozen=True, order=True)
class Permission:
    """One IAM action a call needs; for iam:PassRole, the service the role must be passed to."""

    action: str
    passed_to_service: str | None = None


_PASS_ROLE_TO_DMS = Permission("iam:PassRole", "dms.amazonaws.com")
_TAG_DMS = Permission("dms:AddTagsToResource")

# Operations authorizing more than the action of their name: (permissions, where it is written).
OPERATION_PERMISSIONS: dict[str, tuple[tuple[Permission, ...], str]] = {
    "dms:CreateReplicationInstance": (
        (_TAG_DMS, Permission("dms:CreateReplicationInstance"), _PASS_ROLE_TO_DMS),
        DMS_REFERENCE,
    ),
    "dms:CreateEndpoint": ((_TAG_DMS, Permission("dms:CreateEndpoint"), _PASS_ROLE_TO_DMS), DMS_REFERENCE),
    "dms:CreateReplicationTask": ((_TAG_DMS, Permission("dms:CreateReplicationTask")), DMS_REFERENCE),
    "s3:ListObjectsV2": ((Permission("s3:ListBucket"),), S3_REFERENCE),
    "s3:GetObject": ((Permission("s3:GetObject"), Permission("s3:ListBucket")), S3_GET_OBJECT),
}

# A Task state's Resource -> the actions its role needs (the resource-specific part is checked apart).
TASK_PERMISSIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "arn:aws:states:::glue:startJobRun.sync": (
        ("glue:StartJobRun", "glue:GetJobRun", "glue:GetJobRuns", "glue:BatchStopJobRun"),
        GLUE_SYNC,
    ),
    "arn:aws:states:::sns:publish": (("sns:Publish",), SNS_PUBLISH),
}
# What Lambda's event source mapping does with the function's role when an SQS queue feeds it.
SQS_EVENT_SOURCE = (
    "AWS Lambda Developer Guide, 'Creating and configuring an Amazon SQS event source mapping', "
    "'Set up the execution role permissions': sqs:ReceiveMessage, sqs:DeleteMessage, "
    "sqs:GetQueueAttributes (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html)"
)
SQS_EVENT_SOURCE_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
LAMBDA_TASK_ACTIONS = ("lambda:InvokeFunction",)
ENCRYPTED_TOPIC_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
LOG_DELIVERY_ACTIONS = (
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
)


@cache
def _api_names(service: str) -> dict[str, str]:
    """boto3 method name -> the API operation's name, from botocore's service model (offline)."""
    model = botocore.session.get_session().get_service_model(service)
    return {xform_name(name): name for name in model.operation_names}


def api_operation(call: ApiCall) -> str:
    """The call as the reference names it: ``dms:CreateEndpoint`` for ``client("dms").create_endpoint``."""
    names = _api_names(call.service)
    if call.operation not in names:
        raise KeyError(f"{call.service} has no operation {call.operation!r}")
    if call.service not in IAM_PREFIX:
        raise KeyError(f"the IAM prefix of boto3's {call.service!r} client: add it to IAM_PREFIX")
    return f"{IAM_PREFIX[call.service]}:{names[call.operation]}"


def permissions_for(call: ApiCall) -> tuple[Permission, ...]:
    """Every permission ``call`` needs."""
    operation = api_operation(call)
    listed = OPERATION_PERMISSIONS.get(operation)
    return listed[0] if listed else (Permission(operation),)
