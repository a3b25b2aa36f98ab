"""The first thing to know about a server: it answers a chat completion."""

from __future__ import annotations

from pytest_infer.client.answers import CHAT, completion_problem


def test_chat_completion_answers(infer_client, infer_server, infer_record):
    resp = infer_client.chat("Say something.", max_tokens=16, temperature=0)
    why = completion_problem(CHAT, resp.status_code, resp.text)
    assert why is None, f"{why}\n{infer_client.curl('POST', CHAT)}"
    content = resp.json()["choices"][0]["message"]["content"]
    assert content.strip(), (
        f"empty answer from {infer_server.framework} {infer_server.version_text}"
    )
    infer_record(
        "infer_evidence", f"POST {CHAT}: HTTP 200, a chat completion of {len(content)} characters"
    )
