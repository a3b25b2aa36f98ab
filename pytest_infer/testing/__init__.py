"""Test helpers shipped with the plugin: the programmable fake OpenAI-compatible server."""
