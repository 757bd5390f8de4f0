"""The local provider API server as the `provider_api_server` fixture."""

from tests.support.provider_api_server import provider_api_server  # noqa: F401
