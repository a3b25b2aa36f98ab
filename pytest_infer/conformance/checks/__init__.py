"""The bundled checks; importing this package registers them all."""

from . import (  # noqa: F401
    chat,
    completions,
    embeddings,
    errors,
    messages,
    models,
    parsers,
    reasoning,
    responses,
    sdk,
    stream,
    tokenize,
    tools,
)
