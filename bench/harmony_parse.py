"""The CPU vLLM's API server spends parsing one streamed gpt-oss token with the harmony format (no GPU).

vLLM 0.11's chat endpoint streams gpt-oss through OpenAI's harmony parser: for every request, at every
engine step, vllm/entrypoints/openai/serving_chat.py (chat_completion_stream_generator, `use_harmony`)
reads the parser's current recipient, feeds it each new token (StreamableParser.process), then reads its
current channel, recipient and last content delta (vllm/entrypoints/harmony_utils.py:
get_streamable_parser_for_assistant). This times exactly that, per token, for 1 to 1,024 parsers fed in
turn as the server's event loop feeds them, over an assistant reply with an analysis and a final
channel (3,000 tokens of English-like text: Python's own os.py, encoded with the o200k vocabulary).

Usage (a scratch virtualenv; openai-harmony is not a kvcalc dependency):

    python -m venv /tmp/harm && /tmp/harm/bin/pip install openai-harmony==0.0.8
    TIKTOKEN_ENCODINGS_BASE=DIR /tmp/harm/bin/python bench/harmony_parse.py

openai-harmony downloads the o200k_base vocabulary on first use; where that is not reachable, DIR is a
folder holding it as o200k_base.tiktoken (llama-index-core's wheel ships the same file as
llama_index/core/_static/tiktoken_cache/fb374d419588a4632f3f557e76b4b70aebbca790, the sha1 of its
download URL). Prints microseconds of CPU per token by streams.
"""

# ruff: noqa
import os
import time

from openai_harmony import HarmonyEncodingName, Role, StreamableParser, load_harmony_encoding

ENC = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
BODY = ENC.encode(open(os.__file__).read()[:20000], allowed_special="all")[:3000]
TOKENS = (
    ENC.encode("<|channel|>analysis<|message|>", allowed_special="all")
    + BODY[:1500]
    + ENC.encode("<|end|><|start|>assistant<|channel|>final<|message|>", allowed_special="all")
    + BODY[1500:]
)


def per_token_us(streams: int, steps: int) -> float:
    """Feed ``steps`` tokens to each of ``streams`` parsers in turn, as serving_chat does a step's outputs."""
    parsers = [StreamableParser(ENC, role=Role.ASSISTANT) for _ in range(streams)]
    start = time.perf_counter()
    for token in TOKENS[:steps]:
        for p in parsers:
            _ = p.current_recipient
            p.process(token)
            _ = (p.current_channel, p.current_recipient, p.last_content_delta or "")
    return (time.perf_counter() - start) / (streams * steps) * 1e6


if __name__ == "__main__":
    for streams, steps in ((1, 3000), (64, 400), (256, 200), (1024, 100)):
        best = min(per_token_us(streams, steps) for _ in range(3))
        print(f"{streams:5d} streams: {best:.2f} us a token")
