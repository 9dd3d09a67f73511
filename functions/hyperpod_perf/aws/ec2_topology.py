"""EC2 DescribeInstanceTopology for the cluster's instances (read-only).

Within the documented limits: at most 100 explicitly specified instance ids per request, and
MaxResults may not be combined with InstanceIds, so each batch of 100 follows NextToken (the
default page holds 20 instances).

HyperPod runs its instances in the SageMaker service account ("HyperPod instances live in the
SageMaker service account and are not visible to DescribeInstances": aws/amazon-vpc-cni-k8s
test/integration/ipamd/hyperpod_common.go), so this call is expected to answer
InvalidInstanceID.NotFound or nothing for them; that is unverified against a live cluster,
hence tried and let fall back. A batch the API refuses ends the attempt: the next ones would be
refused alike, and one call is all a HyperPod cluster costs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import translate_client_error

#: "Constraints: Maximum 100 explicitly specified instance IDs." (EC2 API reference)
MAX_IDS_PER_CALL = 100
#: Pages followed per batch before giving up (100 ids at 20 per page is 5; a loop must end).
MAX_PAGES_PER_BATCH = 20
CONTEXT = "ec2:DescribeInstanceTopology"


class InstanceTopology:
    """`Instances[]` of DescribeInstanceTopology for the given instance ids, all batches merged."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def describe(self, instance_ids: Iterable[str]) -> dict[str, Any]:
        """`{"Instances": [...]}` as the API returns them; raises the named error of the first refusal."""
        ids = list(dict.fromkeys(instance_ids))
        instances: list[dict[str, Any]] = []
        for start in range(0, len(ids), MAX_IDS_PER_CALL):
            batch = ids[start : start + MAX_IDS_PER_CALL]
            token: str | None = None
            for _ in range(MAX_PAGES_PER_BATCH):
                kwargs: dict[str, Any] = {"InstanceIds": batch}
                if token:
                    kwargs["NextToken"] = token
                try:
                    page = self._client.describe_instance_topology(**kwargs)
                except (ClientError, BotoCoreError) as exc:
                    raise translate_client_error(exc, CONTEXT) from exc
                instances.extend(page.get("Instances") or [])
                token = page.get("NextToken")
                if not token:
                    break
        return {"Instances": instances}
