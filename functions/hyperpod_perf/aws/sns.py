"""The notification topic: one message, a body per protocol (e-mail text, Chatbot JSON)."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import translate_client_error
from hyperpod_perf.domain.report import SNS_SUBJECT_MAX_CHARS


class Notifier:
    def __init__(self, client: Any, topic_arn: str) -> None:
        self._sns = client
        self.topic_arn = topic_arn

    def publish(self, subject: str, email_text: str, chatbot_message: dict[str, Any]) -> str:
        """MessageStructure=json: e-mail gets the text, HTTPS/Chatbot subscribers the JSON body."""
        chatbot_body = json.dumps(chatbot_message, ensure_ascii=False)
        message = {
            "default": email_text,
            "email": email_text,
            "email-json": chatbot_body,
            "https": chatbot_body,
        }
        try:
            response = self._sns.publish(
                TopicArn=self.topic_arn,
                Subject=safe_subject(subject),
                Message=json.dumps(message, ensure_ascii=False),
                MessageStructure="json",
            )
        except (ClientError, BotoCoreError) as exc:
            raise translate_client_error(exc, "sns:Publish") from exc
        return response["MessageId"]


def safe_subject(subject: str) -> str:
    ascii_only = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in subject)
    return ascii_only[:SNS_SUBJECT_MAX_CHARS] or "hyperpod-perf"
