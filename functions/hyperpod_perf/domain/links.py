"""Where a stored report can be opened from a phone: the S3 console page and a presigned link.

Why two links, and the `aws s3 cp` line kept beside them: an `s3://` address opens nothing in a
mail client or Slack. The console page of the object needs a console sign-in but never expires;
a presigned HTTPS GET opens without one, but only for a while — and a URL presigned with temporary
credentials (a Lambda function's role) stops working when those credentials expire, whatever expiry
it was signed with (Amazon S3 User Guide, "Download and upload objects with presigned URLs",
"Expiration time for presigned URLs": with IAM role credentials "the presigned URL expires when
the role session expires, even if you specify a longer expiration time"). So the lifetime a
message states is the most it may last, never a promise. Pure: no AWS call (aws/report_links.py
signs the URL).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

#: The regions of the standard `aws` partition, whose console is `<region>.console.aws.amazon.com`.
#: China (`cn-…`) and GovCloud (`us-gov-…`) have consoles on other hosts: no console link there.
_OTHER_PARTITION_PREFIXES = ("cn-", "us-gov-", "us-iso", "eu-isoe-")


def console_object_url(bucket: str, key: str, region: str | None) -> str | None:
    """The S3 console's page of one object (its overview, with Open and Download):
    `https://<region>.console.aws.amazon.com/s3/object/<bucket>?region=<region>&prefix=<key>`, the
    address the console itself shows for an object. None without a region or outside the standard
    partition (another console host)."""
    if not region or region.startswith(_OTHER_PARTITION_PREFIXES) or not bucket or not key:
        return None
    return (
        f"https://{region}.console.aws.amazon.com/s3/object/{quote(bucket, safe='')}"
        f"?region={quote(region, safe='')}&prefix={quote(key, safe='/')}"
    )


@dataclass(frozen=True)
class ReportLinks:
    """The report's three addresses. `presigned_url` is None when it could not be signed as stated
    (no credentials, a non-HTTPS local endpoint, a signature without `X-Amz-Expires`)."""

    s3_uri: str
    console_url: str | None = None
    presigned_url: str | None = None
    #: What the URL was signed with (`X-Amz-Expires`): the longest it can work, not how long it will.
    presigned_expires_s: int | None = None

    def presigned_lifetime(self) -> str:
        """`valid up to 12 h, less if the Lambda function's credentials expire first` — said each
        time the link is shown, so no reader takes the number for a promise."""
        seconds = self.presigned_expires_s or 0
        span = f"{seconds // 3600} h" if seconds >= 3600 and seconds % 3600 == 0 else f"{seconds // 60} min"
        return f"valid up to {span}, less if the Lambda function's credentials expire first"
