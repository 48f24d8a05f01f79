"""What the two SDK-backed providers share: the key lookup, a client per call, the retried stream.

Subclasses name their SDK module and client class, build the request and open the
stream; the SDK module is imported on first use, never when a provider is constructed.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from larik_jupyter.llm.api_errors import ApiTarget, refused_for_images
from larik_jupyter.llm.context import image_key, iter_images, model_context, newest_images_omitted
from larik_jupyter.llm.events import ContextNotice, StreamEvent
from larik_jupyter.llm.messages import Message
from larik_jupyter.llm.models import ModelInfo
from larik_jupyter.llm.provider import (
    Destination,
    ProviderError,
    RequestDoor,
    ToolSchema,
    request_body,
)
from larik_jupyter.llm.retry import RetryPolicy, with_retries
from larik_jupyter.llm.sdk_import import import_sdk
from larik_jupyter.llm.sdk_stream import ChunkDecoder, run_attempt
from larik_jupyter.plural import counted

# Local servers ignore the key, but the SDKs refuse to run without one.
NO_KEY = "not-needed"


class SdkProvider:
    """A provider streaming through an official SDK; `key_env=None` means no key is needed.

    `info` is the model's entry of the model table: each call sends the model context it
    allows (`llm/context.py`: no blank text, images as notes without `vision`, images within
    its limits). After the API refused a request over its images (a 400 naming images, or a
    413), the images of that request are left out of later ones, so the next prompt is not
    refused the same way."""

    sdk_module: str
    client_class: str
    # The tool-call ids the API takes (others are mapped, `llm/context.py`); None: any.
    tool_ids: re.Pattern[str] | None = None
    base_url_env: str
    default_base_url: str
    decoder: type[ChunkDecoder]

    def __init__(
        self,
        model: str,
        *,
        name: str,
        title: str,
        api_key: str | None,
        key_env: str | None,
        base_url: str | None,
        retry: RetryPolicy | None,
        timeout: float,
        info: ModelInfo,
    ) -> None:
        key = api_key or (os.environ.get(key_env) if key_env else NO_KEY)
        if not key:
            raise ProviderError(
                f"{key_env} is not set; set it to your {title} API key, "
                "or choose another model with provider:model."
            )
        self.model = model
        self.name = name
        self.info = info
        # The images (`image_key`) a refused request carried: never sent again by this provider.
        self.refused_images: set[str] = set()
        self.retry = retry or RetryPolicy()
        self._timeout = timeout
        self._key = key
        self.http_client_factory: Callable[[], Any] | None = None
        self.door: RequestDoor | None = None
        self._base_url = base_url or os.environ.get(self.base_url_env) or self.default_base_url
        self._target = ApiTarget(title, name, model, self._base_url, key_env, key)

    @property
    def vision(self) -> bool:
        """Whether the model takes images (else each is sent as a text note)."""
        return self.info.vision

    def request(
        self, system: str, messages: list[Message], tools: list[ToolSchema], *, cache: bool = True
    ) -> dict[str, Any]:
        """The keyword arguments of the SDK's create call for one call; `cache` False asks
        for no prompt-cache writes (a request whose prefix no later call repeats)."""
        raise NotImplementedError

    def create(self, client: Any, params: dict[str, Any]) -> Awaitable[Any]:
        """Open the SDK stream for `params` on `client`."""
        raise NotImplementedError

    def _new_client(self) -> Any:
        # A client per call: its connections belong to the event loop of that call, and
        # callers (tests, scripts) may run each call on a fresh loop.
        client_class = getattr(import_sdk(self.sdk_module), self.client_class)
        # A debug trace sets `http_client_factory` to record the HTTP bodies.
        extra = {"http_client": self.http_client_factory()} if self.http_client_factory else {}
        return client_class(
            api_key=self._key, base_url=self._base_url, max_retries=0, timeout=self._timeout, **extra
        )

    async def stream(
        self, system: str, messages: list[Message], tools: list[ToolSchema], *, cache: bool = True
    ) -> AsyncIterator[StreamEvent]:
        """Stream one call, retrying transient failures before any output."""
        sdk = import_sdk(self.sdk_module)
        if lost := newest_images_omitted(messages, self.info, self.refused_images):
            yield ContextNotice(
                f"{counted(lost, 'image')} of the latest prompt or tool results {'was' if lost == 1 else 'were'} left out of the "
                f"request to {self.name}: with them it is over the model's image limits "
                f"({self.info.max_images} images, {self.info.max_image_bytes:,} characters of "
                "image data); the model was told where each came from."
            )
        context = model_context(messages, self.info, self.refused_images, self.tool_ids)
        params = request_body(
            self.door, Destination(self.name, self._base_url), system, context,
            lambda s, m: self.request(s, m, tools, cache=cache),
        )
        async with self._new_client() as client:
            attempt = functools.partial(
                run_attempt, sdk, self._target, lambda: self.create(client, params), self.decoder
            )
            try:
                async for event in with_retries(self.name, self.retry, attempt):
                    yield event
            except ProviderError as exc:
                if refused_for_images(exc):
                    self.refused_images.update(image_key(b) for _, b in iter_images(context))
                raise
