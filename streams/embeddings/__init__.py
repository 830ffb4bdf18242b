"""Text embeddings for memory's semantic ranking: a protocol and an OpenAI-compatible client."""
