"""Provider-neutral messages, streaming events, providers and pricing."""
