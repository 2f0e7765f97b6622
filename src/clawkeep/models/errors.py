"""The errors of a model call: `ModelError` (a `ClawkeepError`) and its kinds, as a provider's
failure is reported, and `WireError` and its kinds, the failures on the wire before any
provider wording (`clawkeep.models.http` turns httpx's exceptions into them).

They live apart from the HTTP clients (`clawkeep.models.http` and `clawkeep.models.chat` load
httpx) so that the turn, the recall and the rerank stage can name them without loading a
client; `clawkeep.models.chat` and `clawkeep.models.http` re-export them.
"""

from __future__ import annotations

from ..errors import ClawkeepError

__all__ = ["ContextOverflowError", "ModelError", "ModelResponseError", "ModelTimeoutError", "WireBroken", "WireError",
           "WireTimeout", "WireTooLarge", "WireUnreachable"]


class ModelError(ClawkeepError):
    """A model call failed. `retryable` marks transient failures (connection, 429, 5xx)."""

    code = "model_error"
    http_status = 502

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str,
        status: int | None = None,
        retryable: bool = False,
        retry_after_s: float | None = None,
    ):
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.status = status
        self.retryable = retryable
        self.retry_after_s = retry_after_s


class ModelTimeoutError(ModelError):
    """No (complete) answer within the per-request timeout. Never retried here."""

    code = "model_timeout"
    http_status = 504


class ContextOverflowError(ModelError):
    """The provider says the prompt exceeds the model's context; the caller should compact."""

    code = "context_overflow"
    # 502 like any provider failure, not 413: by the time the provider refuses, the user's
    # message is stored, and 413 reads as "request body refused, nothing kept" (the provider's
    # own status is in `.status`)
    http_status = 502

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str,
        status: int | None = None,
        observed_tokens: int | None = None,
        limit_tokens: int | None = None,
    ):
        super().__init__(message, provider=provider, model=model, status=status)
        self.observed_tokens = observed_tokens
        self.limit_tokens = limit_tokens


class ModelResponseError(ModelError):
    """The answer was empty, not JSON, or not the shape the protocol promises."""

    code = "model_bad_response"


class WireError(Exception):
    """A failure on the wire, before any provider wording. `cause` is the httpx exception, if any."""

    def __init__(self, detail: str = "", cause: BaseException | None = None):
        super().__init__(detail)
        self.detail = detail
        self.cause = cause


class WireTimeout(WireError):
    """No answer (`complete=False`) or no complete answer (`complete=True`) within the timeout."""

    def __init__(self, *, complete: bool, cause: BaseException | None = None):
        super().__init__("no complete answer" if complete else "no answer", cause)
        self.complete = complete


class WireUnreachable(WireError):
    """No connection: refused, DNS, TLS, proxy, unsupported URL."""


class WireBroken(WireError):
    """The connection broke mid-exchange (dropped, reset, malformed HTTP)."""


class WireTooLarge(WireError):
    def __init__(self, limit: int):
        super().__init__(f"answer larger than {limit} bytes")
        self.limit = limit
