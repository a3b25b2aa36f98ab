"""The bundled checks; importing this package registers them all."""
from . import chat, completions, embeddings, errors, models, sdk, stream, tools  # noqa: F401
