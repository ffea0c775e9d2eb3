"""The HTTP transport of judges and generators (loaded on first use).

``endpoint`` (:class:`Endpoint`: URL, model, key source, deadline and attempt timeout, retries,
concurrency; :class:`Sampling`; :class:`Naming`; :class:`Secret`), ``client`` (the
OpenAI-compatible :class:`ChatClient`, :class:`Meter`, :class:`EndpointUser`), ``costs``
(:class:`Usage`, :class:`Cost`) and ``budget`` (the session's token :class:`Budget`). Secret
and URL-credential redaction for messages is :mod:`pytest_ragmetrics.redaction`.
"""

from typing import TYPE_CHECKING

from pytest_ragmetrics._lazy import lazy_exports

if TYPE_CHECKING:
    from pytest_ragmetrics.transport.budget import Budget
    from pytest_ragmetrics.transport.client import ChatClient, ChatReply, EndpointUser, Meter
    from pytest_ragmetrics.transport.costs import Cost, Usage
    from pytest_ragmetrics.transport.endpoint import Endpoint, Naming, Sampling, Secret

_EXPORTS = {
    "Budget": "pytest_ragmetrics.transport.budget",
    "ChatClient": "pytest_ragmetrics.transport.client",
    "ChatReply": "pytest_ragmetrics.transport.client",
    "Cost": "pytest_ragmetrics.transport.costs",
    "Endpoint": "pytest_ragmetrics.transport.endpoint",
    "EndpointUser": "pytest_ragmetrics.transport.client",
    "Meter": "pytest_ragmetrics.transport.client",
    "Naming": "pytest_ragmetrics.transport.endpoint",
    "Sampling": "pytest_ragmetrics.transport.endpoint",
    "Secret": "pytest_ragmetrics.transport.endpoint",
    "Usage": "pytest_ragmetrics.transport.costs",
}
__all__ = [
    "Budget",
    "ChatClient",
    "ChatReply",
    "Cost",
    "Endpoint",
    "EndpointUser",
    "Meter",
    "Naming",
    "Sampling",
    "Secret",
    "Usage",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
