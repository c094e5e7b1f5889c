"""The CPU one streamed token costs vLLM V1's API server, timed with vLLM's own code (no GPU, no model).

Usage (a scratch virtualenv; vLLM is not a kvcalc dependency):
    pip install vllm==0.11.0 transformers==4.57.1 && python bench/vllm_frontend.py

What one API-server process does for every running request at every engine step, in one event
loop (vllm/v1/engine/async_llm.py output_handler, vllm/entrypoints/openai/serving_chat.py,
0.11.0), run here as the server runs it:

1. decode the step's EngineCoreOutputs from msgpack (vllm/v1/serial_utils.py MsgpackDecoder);
2. OutputProcessor.process_outputs in slices of 128 requests: incremental detokenization, the
   per-request stats (log_stats on, the server's default), a DELTA RequestOutput into each
   request's RequestOutputCollector;
3. each request's chat_completion_stream_generator (the OpenAI chat endpoint, streamed, with
   stream_options include_usage as `vllm bench serve --backend openai-chat` sends): one
   ChatCompletionStreamResponse serialised as an SSE frame.

And what a request costs on its way in: its JSON body validated into ChatCompletionRequest, a
ChatML chat template rendered, its prompt tokenized, by prompt length.

Not timed: Prometheus and the periodic log (StatLoggerManager), the HTTP write (uvicorn,
starlette) and the client. So the figure is a floor on the API server's cost of a streamed token.

The tokenizer is a byte-level BPE trained here on Python's own source files (no model files are
reachable from this machine); the decoded text is English-like code, the vocabulary 32,000.
Prints microseconds of CPU per streamed token, by running requests.
"""

# ruff: noqa
import asyncio
import gc
import glob
import json
import os
import sys
import tempfile
import time

N_STEPS = 64


def make_tokenizer() -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    path = tempfile.mkdtemp()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    files = sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "*.py")))[:200]
    tok.train(files, trainers.BpeTrainer(vocab_size=32000, special_tokens=["<|endoftext|>"], show_progress=False))
    tok.save(os.path.join(path, "tokenizer.json"))
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>", "model_max_length": 1 << 20}, f)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump({"model_type": "llama", "architectures": ["LlamaForCausalLM"]}, f)
    return path


def serving_chat():
    """vLLM 0.11's OpenAIServingChat with the attributes its stream generator reads set as `vllm serve`
    sets them for a plain chat model (no reasoning or tool parser, no harmony), without an engine."""
    from vllm.entrypoints.openai.serving_chat import OpenAIServingChat

    serving = object.__new__(OpenAIServingChat)
    for k, v in dict(
        reasoning_parser=None,
        use_harmony=False,
        request_logger=None,
        tool_parser=None,
        tool_call_id_type="random",
        enable_log_outputs=False,
        enable_prompt_tokens_details=False,
        response_role="assistant",
        enable_auto_tools=False,
        enable_force_include_usage=False,
    ).items():
        setattr(serving, k, v)
    return serving


def main() -> None:
    from vllm.transformers_utils.tokenizer import get_tokenizer
    from vllm.sampling_params import RequestOutputKind, SamplingParams
    from vllm.v1.engine import EngineCoreOutput, EngineCoreOutputs, EngineCoreRequest
    from vllm.v1.engine.output_processor import OutputProcessor, RequestOutputCollector
    from vllm.v1.metrics.stats import IterationStats
    from vllm.v1.serial_utils import MsgpackDecoder, MsgpackEncoder
    from vllm.entrypoints.openai.protocol import ChatCompletionRequest, RequestResponseMetadata

    tokenizer = get_tokenizer(make_tokenizer())
    text = open(os.path.join(os.path.dirname(os.__file__), "typing.py")).read()
    stream_ids = tokenizer.encode(text)[: N_STEPS + 16]
    prompt_ids = tokenizer.encode(text[5000:6000])[:200]

    serving = serving_chat()

    async def run(n: int) -> float:
        proc = OutputProcessor(tokenizer, log_stats=True)
        enc, dec = MsgpackEncoder(), MsgpackDecoder(EngineCoreOutputs)
        gens = []
        for i in range(n):
            rid = f"chatcmpl-{i}"
            sp = SamplingParams(temperature=0.0, max_tokens=N_STEPS + 8, output_kind=RequestOutputKind.DELTA)
            req = EngineCoreRequest(rid, prompt_ids, None, sp, None, None, time.time(), None, None, None)
            q = RequestOutputCollector(RequestOutputKind.DELTA)
            proc.add_request(req, None, None, 0, q)

            async def results(q=q):
                while True:
                    out = q.get_nowait() or await q.get()
                    yield out
                    if out.finished:
                        return

            creq = ChatCompletionRequest(
                model="m",
                messages=[{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
                temperature=0.0,
                max_completion_tokens=N_STEPS + 8,
                stream=True,
                stream_options={"include_usage": True},
            )
            gen = serving.chat_completion_stream_generator(
                creq, results(), rid, "m", [], tokenizer, RequestResponseMetadata(request_id=rid), False
            )
            gens.append(gen)
        frames = [0]

        async def drain(gen):
            async for _ in gen:
                frames[0] += 1

        tasks = [asyncio.create_task(drain(g)) for g in gens]
        await asyncio.sleep(0)
        # One engine step's outputs for every running request, as the engine core sends them.
        steps = []
        for s in range(N_STEPS):
            fin = "length" if s == N_STEPS - 1 else None
            outs = [
                EngineCoreOutput(f"chatcmpl-{i}", [stream_ids[s]], finish_reason=None if fin is None else 1) for i in range(n)
            ]
            steps.append(enc.encode(EngineCoreOutputs(outputs=outs, timestamp=time.monotonic())))
        gc.collect()
        t0 = time.process_time()
        for frames_bytes in steps:
            outputs = dec.decode(frames_bytes)
            stats = IterationStats()
            k = len(outputs.outputs)
            chunks = [outputs.outputs[j : j + 128] for j in range(0, k, 128)]
            for j, sl in enumerate(chunks):
                proc.process_outputs(sl, outputs.timestamp, stats)
                if j + 1 < len(chunks):
                    await asyncio.sleep(0)
            # let every request's generator turn its RequestOutput into an SSE frame
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        t = time.process_time() - t0
        return t / (n * N_STEPS), frames[0]

    print(f"vLLM frontend, {sys.version.split()[0]}, {N_STEPS} steps each:")
    for n in (16, 64, 256, 1024):
        per, frames = asyncio.run(run(n))
        print(f"  {n:5d} running requests: {per * 1e6:6.1f} us of CPU a streamed token ({frames:,} SSE frames)")

    # A request's way in: the request body validated (the OpenAI chat protocol's pydantic model), a
    # ChatML template rendered, the prompt tokenized (vLLM's get_tokenizer: a fast, Rust tokenizer).
    chatml = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    print("request intake (us of CPU a request):")
    for chars in (1_000, 4_000, 16_000, 64_000):
        body_text = (text * (1 + chars // len(text)))[:chars]
        body = json.dumps(
            {
                "model": "m",
                "messages": [{"role": "user", "content": [{"type": "text", "text": body_text}]}],
                "temperature": 0.0,
                "max_completion_tokens": 200,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        )
        reps = max(20, 300_000 // chars)
        t0 = time.process_time()
        for _ in range(reps):
            ChatCompletionRequest.model_validate_json(body)
        t1 = time.process_time()
        for _ in range(reps):
            rendered = tokenizer.apply_chat_template(
                [{"role": "user", "content": body_text}], tokenize=False, add_generation_prompt=True, chat_template=chatml
            )
        t2 = time.process_time()
        for _ in range(reps):
            ids = tokenizer.encode(rendered, add_special_tokens=False)
        t3 = time.process_time()
        v, r, k = ((b - a) / reps * 1e6 for a, b in ((t0, t1), (t1, t2), (t2, t3)))
        print(
            f"  {len(ids):6,} prompt tokens: validate {v:7.1f}, template {r:7.1f}, tokenize {k:8.1f} ({k / len(ids):.2f} a token)"
        )


if __name__ == "__main__":
    main()
