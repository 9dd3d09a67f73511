"""The links of a stored report: its S3 console page and a presigned HTTPS GET of the object.

Why a class with an injected client: the signing is local (no request is sent), but what it signs
with decides whether the link works — the client must sign Signature Version 4 (`X-Amz-Expires`,
up to 7 days: botocore 1.44 still presigns S3 URLs in the older `Signature`/`Expires` form unless told)
against the bucket's regional host, which `presigning_config` gives. The link is authorised
as the signer: it opens only while the signer may `s3:GetObject` the key (the Publish role may, on
`reports/*`: infra/constructs/functions.py) and, signed with a Lambda role's temporary credentials,
only until those expire (domain/links.py says how long, honestly).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.s3 import split_s3_uri
from hyperpod_perf.domain.links import ReportLinks, console_object_url

#: What the presigned link asks for: 12 hours, the longest an IAM role session can be configured to
#: last (AWS STS API Reference, AssumeRole `DurationSeconds`: a role's maximum session duration is
#: 1 to 12 hours), so a message read the next morning may still open. AWS does not document how long
#: a Lambda function's credentials last; they may expire sooner, and the message says so.
REPORT_LINK_EXPIRES_S = 12 * 3600
#: SigV4 query signing allows at most 7 days (Amazon S3 User Guide, presigned URLs).
MAX_PRESIGNED_EXPIRES_S = 7 * 24 * 3600


def presigning_config() -> Any:
    """botocore Config for the signing client: SigV4, virtual-hosted, the regional endpoint (also
    in us-east-1), so the URL names `<bucket>.s3.<region>.amazonaws.com` and no redirect (which a
    signature bound to the host would not survive) is needed."""
    from botocore.config import Config

    return Config(
        signature_version="s3v4",
        s3={"addressing_style": "virtual", "us_east_1_regional_endpoint": "regional"},
    )


class ReportLinker:
    """Links for one report object; `links` never raises (a message goes out without the direct
    link rather than not at all)."""

    def __init__(self, client: Any, *, expires_s: int = REPORT_LINK_EXPIRES_S) -> None:
        if not 1 <= expires_s <= MAX_PRESIGNED_EXPIRES_S:
            raise ValueError(f"expires_s must be 1..{MAX_PRESIGNED_EXPIRES_S}, got {expires_s}")
        self._s3 = client
        self.expires_s = expires_s

    def links(self, s3_uri: str) -> ReportLinks:
        bucket, key = split_s3_uri(s3_uri)
        region = getattr(getattr(self._s3, "meta", None), "region_name", None)
        url = self._presigned(bucket, key)
        return ReportLinks(
            s3_uri=s3_uri,
            console_url=console_object_url(bucket, key, region),
            presigned_url=url,
            presigned_expires_s=self.expires_s if url else None,
        )

    def _presigned(self, bucket: str, key: str) -> str | None:
        try:
            url = self._s3.generate_presigned_url(
                "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=self.expires_s
            )
        except (BotoCoreError, ClientError):  # no credentials in reach: the other links still go out
            return None
        parts = urlsplit(str(url))
        expires = parse_qs(parts.query).get("X-Amz-Expires", [""])[0]
        # Only what the message can state truthfully: HTTPS (not a local test endpoint), SigV4 with
        # the expiry asked for.
        if parts.scheme != "https" or expires != str(self.expires_s):
            return None
        return str(url)
