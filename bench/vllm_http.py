"""vLLM V1's whole API server and `vllm bench serve`'s client, timed with their own code (no GPU, no model).

Usage (a scratch virtualenv; vLLM is not a kvcalc dependency):
    pip install vllm==0.11.0 transformers==4.57.1 && python bench/vllm_http.py

bench/vllm_frontend.py times the API server's output path alone (msgpack decode, detokenization,
the chat chunk) and leaves out the HTTP write and the client. This one runs all of it, in two
processes as a benchmark does:

- the server: vLLM 0.11.0's own FastAPI app (vllm/entrypoints/openai/api_server.py build_app: its
  router, middleware and StreamingResponse) under uvicorn and uvloop as `vllm serve` runs it. Only
  the engine core is replaced: a task in the server's event loop that, like AsyncLLM's
  output_handler (vllm/v1/engine/async_llm.py), takes one engine step's EngineCoreOutputs (one
  token for every running request, msgpack-encoded as the engine core sends them), decodes them and
  runs OutputProcessor.process_outputs in slices of 128, which feeds each request's
  chat_completion_stream_generator. The chat handler is OpenAIServingChat's own stream generator;
  a request's template and tokenization are skipped (bench/vllm_frontend.py times them).
- the client: `vllm bench serve --backend openai-chat`'s request function
  (vllm/benchmarks/lib/endpoint_request_func.py async_request_openai_chat_completions) with the
  session serve.py opens, N requests at once, each streaming L tokens.

The engine steps as fast as the server's event loop lets it, so the figures are what one API
server and one client process can carry: tokens a second delivered, CPU a token in each process
(the engine's msgpack encoding, the engine core's own work, is measured apart and taken out), and
the TPOT the client measured. The machine's two vCPUs give each process its own.
"""

# ruff: noqa
import argparse
import asyncio
import dataclasses
import gc
import os
import socket
import subprocess
import sys
import time

L = 64


def server(port: int) -> None:
    import uvicorn
    import uvloop

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from vllm_frontend import make_tokenizer, serving_chat

    from vllm.entrypoints.openai.api_server import build_app
    from vllm.entrypoints.openai.cli_args import FrontendArgs
    from vllm.entrypoints.openai.protocol import RequestResponseMetadata
    from vllm.sampling_params import RequestOutputKind, SamplingParams
    from vllm.transformers_utils.tokenizer import get_tokenizer
    from vllm.v1.engine import EngineCoreOutput, EngineCoreOutputs, EngineCoreRequest
    from vllm.v1.engine.output_processor import OutputProcessor, RequestOutputCollector
    from vllm.v1.metrics.stats import IterationStats
    from vllm.v1.serial_utils import MsgpackDecoder, MsgpackEncoder

    tokenizer = get_tokenizer(make_tokenizer())
    text = open(os.path.join(os.path.dirname(os.__file__), "typing.py")).read()
    stream_ids = tokenizer.encode(text)[: L + 16]
    prompt_ids = tokenizer.encode(text[5000:6000])[:200]

    # `vllm serve`'s frontend defaults (FrontendArgs); the full parser needs a device to build.
    app = build_app(argparse.Namespace(**dataclasses.asdict(FrontendArgs())))
    serving = serving_chat()

    proc = OutputProcessor(tokenizer, log_stats=True)
    enc, dec = MsgpackEncoder(), MsgpackDecoder(EngineCoreOutputs)
    active: dict[str, int] = {}  # request id -> tokens sent
    wake = asyncio.Event()
    enc_cpu = [0.0]
    counter = [0]

    class Chat:
        async def create_chat_completion(self, request, raw_request):
            rid = f"chatcmpl-{counter[0]}"
            counter[0] += 1
            sp = SamplingParams(temperature=0.0, max_tokens=L, output_kind=RequestOutputKind.DELTA)
            req = EngineCoreRequest(rid, prompt_ids, None, sp, None, None, time.time(), None, None, None)
            q = RequestOutputCollector(RequestOutputKind.DELTA)
            proc.add_request(req, None, None, 0, q)

            async def results():
                while True:
                    out = q.get_nowait() or await q.get()
                    yield out
                    if out.finished:
                        return

            active[rid] = 0
            wake.set()
            return serving.chat_completion_stream_generator(
                request, results(), rid, "m", [], tokenizer, RequestResponseMetadata(request_id=rid), False
            )

    app.state.openai_serving_chat = Chat()
    app.state.enable_server_load_tracking = False
    app.state.log_stats = False  # the lifespan's periodic log task needs an engine client

    async def engine() -> None:
        while True:
            if not active:
                wake.clear()
                await wake.wait()
            c0 = time.process_time()
            outs = []
            for rid in list(active):
                s = active[rid]
                last = s == L - 1
                outs.append(EngineCoreOutput(rid, [stream_ids[s]], finish_reason=1 if last else None))
                if last:
                    del active[rid]
                else:
                    active[rid] = s + 1
            frame = enc.encode(EngineCoreOutputs(outputs=outs, timestamp=time.monotonic()))
            enc_cpu[0] += time.process_time() - c0
            # AsyncLLM.output_handler: decode, then process_outputs in slices of 128 with a yield between
            outputs = dec.decode(frame)
            stats = IterationStats()
            k = len(outputs.outputs)
            for j in range(0, k, 128):
                proc.process_outputs(outputs.outputs[j : j + 128], outputs.timestamp, stats)
                await asyncio.sleep(0)

    async def main() -> None:
        from fastapi import Request

        @app.get("/enc_cpu")
        async def _enc(_: Request):
            return {"enc_cpu": enc_cpu[0]}

        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        srv = uvicorn.Server(config)
        asyncio.get_running_loop().create_task(engine())
        await srv.serve()

    gc.collect()
    uvloop.run(main())


async def client(port: int, n: int) -> dict:
    import aiohttp

    from vllm.benchmarks.lib.endpoint_request_func import RequestFuncInput, async_request_openai_chat_completions

    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    connector = aiohttp.TCPConnector(
        limit=n,
        limit_per_host=n,
        ttl_dns_cache=300,
        use_dns_cache=True,
        keepalive_timeout=60,
        enable_cleanup_closed=True,
        force_close=False,
        ssl=False,
    )
    session = aiohttp.ClientSession(connector=connector, trust_env=True, timeout=aiohttp.ClientTimeout(total=3600))
    inp = RequestFuncInput(prompt="hello there", api_url=url, prompt_len=200, output_len=L, model="m")
    if n == 0:  # the warm-up, as serve.py's test prompt: run and timed apart
        await async_request_openai_chat_completions(inp, session)
        await session.close()
        return {}
    c0, t0 = time.process_time(), time.perf_counter()
    outs = await asyncio.gather(*(async_request_openai_chat_completions(inp, session) for _ in range(n)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    await session.close()
    ok = [o for o in outs if o.success]
    chunks = sum(len(o.itl) + 1 for o in ok)
    tpot = sum((o.latency - o.ttft) / max(len(o.itl), 1) for o in ok) / max(len(ok), 1)
    ttft = sum(o.ttft for o in ok) / max(len(ok), 1)
    return dict(ok=len(ok), chunks=chunks, wall=wall, cpu=cpu, tpot=tpot, ttft=ttft)


def main() -> None:
    import json
    import urllib.request

    import psutil

    if len(sys.argv) > 1 and sys.argv[1] == "--server":
        server(int(sys.argv[2]))
        return
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--server", str(port)])
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/enc_cpu").read()
                break
            except Exception:
                time.sleep(0.5)
        sp = psutil.Process(p.pid)
        print(f"vLLM 0.11.0 API server + vllm bench serve client, {sys.version.split()[0]}, {L} tokens a request:")
        for n in (16, 64, 256, 1024):
            asyncio.run(client(port, 0))
            enc0 = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/enc_cpu").read())["enc_cpu"]
            s0 = sum(sp.cpu_times()[:2])
            r = asyncio.run(client(port, n))
            s1 = sum(sp.cpu_times()[:2])
            enc1 = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/enc_cpu").read())["enc_cpu"]
            srv = (s1 - s0) - (enc1 - enc0)
            tok = r["chunks"]
            print(
                f"  {n:5d} streams: {tok / r['wall']:8,.0f} tokens/s delivered; server {srv / tok * 1e6:6.1f} us CPU a token, "
                f"client {r['cpu'] / tok * 1e6:6.1f}; client-measured TPOT {r['tpot'] * 1e3:7.2f} ms, TTFT {r['ttft'] * 1e3:7.1f} ms"
            )
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
