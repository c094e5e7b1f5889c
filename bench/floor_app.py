"""The floor `kvcalc size` is measured against (bench/startup.py): a minimal typer app that parses
the same options and prints one line (--json) or a one-row rich table, doing no work.

Usage: python bench/floor_app.py --seq 4096 --model llama2-7b [--json]
"""

from __future__ import annotations

import typer

app = typer.Typer(add_completion=False)


@app.command()
def size(
    seq: str = typer.Option(..., "--seq", "-s", metavar="<tokens>", help="Tokens per request."),
    model: str = typer.Option("llama3.1-8b", "--model", "-m", metavar="<name|file>", help="Model."),
    batch: int = typer.Option(1, "--batch", "-b", metavar="<n>", help="Requests in the batch."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", metavar="<dtype>", help="KV cache format."),
    tp: int = typer.Option(1, "--tp", metavar="<n>", help="Tensor-parallel size."),
    pp: int = typer.Option(1, "--pp", metavar="<n>", help="Pipeline-parallel size."),
    dp: int = typer.Option(1, "--dp", metavar="<n>", help="Data-parallel attention ranks."),
    ep: int = typer.Option(1, "--ep", metavar="<n>", help="Expert-parallel size."),
    block_size: int = typer.Option(None, "--block-size", metavar="<tokens>", help="Tokens per KV block."),
    engine: str = typer.Option(None, "--engine", "-e", metavar="<engine>", help="Serving engine."),
    max_num_batched_tokens: int = typer.Option(None, "--max-num-batched-tokens", metavar="<tokens>", help="Tokens a pass."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    if json_out:
        print(f'{{"model": "{model}", "seq": "{seq}"}}')
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{model} at {seq} tokens")
    t.add_column("layer kind")
    t.add_column("bytes/token", justify="right")
    t.add_row("full attention", "524,288")
    Console().print(t)


if __name__ == "__main__":
    app()
