"""The python tool's output throughput with live output on: a call printing 32 MB as 320,000
lines, against the same code with its stdout redirected to a `StringIO`, in the same kernel,
round by round.

One real ipykernel (jupyter_client) in a temporary project with `%load_ext larik_jupyter` and a
scripted model. Each round runs the code with its stdout redirected to a `StringIO` inside the
kernel (how the tool kept output before it streamed it; timed in the kernel), then through a `%%larik` turn whose model calls `python` with the same code; the
subject is that call's own duration as the session records it (running the code with its stdout
kept and streamed to the call's row at most ten times a second, the result for the model).
The call's duration also holds its fixed work (comparing the variables, looking for figures).
Target: within 1.5x the StringIO run.

Run:

    .venv/bin/python bench/bench_python_output.py [ROUNDS]
"""

from __future__ import annotations

import sys
import tempfile

from bench_notebook_run import Kernel, last_tool_result, scripted_kernel
from paired import banner, span

LINES = 320_000
CODE = f"for i in range({LINES}):\n    print('x' * 99)"  # 100 bytes a line: 32 MB
TIMED = (
    "import contextlib, io, time\n_started = time.perf_counter()\n"
    f"with contextlib.redirect_stdout(io.StringIO()):\n    exec({CODE!r})\n"
    "_seconds = time.perf_counter() - _started"
)


def value_of(kernel: Kernel, name: str) -> float:
    """A float variable of the kernel, read through an execute reply's user expressions."""
    reply = kernel.kc.execute_interactive("", user_expressions={"v": name}, timeout=60, output_hook=lambda msg: None)
    return float(reply["content"]["user_expressions"]["v"]["data"]["text/plain"])


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    banner()
    with tempfile.TemporaryDirectory() as tmp:
        call = {"type": "tool_use", "name": "python", "input": {"code": CODE}}
        project, data, kernel = scripted_kernel(tmp, call, rounds + 1)
        try:
            buffered: list[float] = []
            tool: list[float] = []
            for round_no in range(rounds + 1):  # the first round warms up (imports, first turn)
                kernel.run(TIMED)
                in_kernel = value_of(kernel, "_seconds")
                kernel.run("%%larik --yes\nprint the lines")
                result = last_tool_result(data)
                assert not result.get("is_error"), result
                assert "characters cut" in result["content"]  # the whole output went through
                if round_no:
                    buffered.append(in_kernel)
                    tool.append(result["duration"])
        finally:
            kernel.close()
    ratios = [t / b for t, b in zip(tool, buffered, strict=True)]
    print(f"code printing {LINES:,} lines ({LINES * 100 / 1e6:.1f} MB), {rounds} rounds")
    print(f"  stdout to a StringIO (in the kernel): {span(buffered, 1000, 0, ' ms')}")
    print(f"  python call (the call's duration):  {span(tool, 1000, 0, ' ms')}")
    print(f"  ratio python call / StringIO:       {span(ratios, 1, 2, 'x')}  (target ≤ 1.5x)")


if __name__ == "__main__":
    main()
