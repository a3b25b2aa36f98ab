"""The first thing to know about a server: it answers a chat completion."""

from __future__ import annotations


def test_chat_completion_answers(infer_client, infer_server):
    resp = infer_client.chat("Say something.", max_tokens=16, temperature=0)
    assert resp.status_code == 200, (
        f"{resp.status_code}: {resp.text[:500]}\n{infer_client.curl('POST', '/v1/chat/completions')}"
    )
    content = resp.json()["choices"][0]["message"]["content"]
    assert isinstance(content, str) and content.strip(), (
        f"empty answer from {infer_server.framework} {infer_server.version_text}"
    )
